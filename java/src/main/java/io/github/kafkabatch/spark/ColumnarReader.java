package io.github.kafkabatch.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.TransferPair;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads splits through the core into {@link ColumnarBatch}es of {@link ArrowColumnVector}s ({@link
 * NullCountedVector}s: no validity lookups in columns without nulls), in exactly the
 * Arrow schema Spark derives from the read schema. Two transports: by default the core's buffers are handed
 * over in place ({@link ArrowImport}: no copy; they are released when Arrow Java lets go of them); with
 * {@code spark.kafkabatch.arrowTransfer=ipc} the batches arrive as an Arrow IPC stream (the native reader
 * writes it piece by piece, this class pulls the pieces as Arrow Java reads, straight into Arrow's
 * buffers). Each batch is valid until the next call to {@link #next}.
 *
 * <p>The vectors loaded into (the hand-off's root, the IPC reader's) are reused from batch to batch and never
 * reach Spark: each batch's buffers are transferred (no copy) to vectors of its own, which Spark may close
 * when done with them ({@code ColumnarToRowExec} closes each batch before asking for the next one). A closed
 * struct vector has lost its children, so it could not be loaded into again.
 */
final class ColumnarReader implements PartitionReader<ColumnarBatch> {
    /** The Python source's logger name: the same lines under the same name. */
    private static final Logger LOG = LoggerFactory.getLogger("kafkabatch.spark");

    private final BufferAllocator allocator;
    private final NativeStream stream;
    /** The IPC transport's reader; null for the hand-off. */
    private final ArrowStreamReader reader;
    /** The hand-off's vectors and their loader; null for IPC. */
    private final VectorSchemaRoot root;
    private final VectorLoader loader;
    /** The batch handed out last, over vectors of its own (closed at the next batch or at close). */
    private ColumnarBatch batch;
    /** The native counts as of the last look (kept once the reader is closed). */
    private long[] counts;

    /**
     * A reader of {@code splits} whose batches have the columns of {@code arrowSchema} (an Arrow IPC schema
     * message, see {@link KafkaLogReaderFactory}), through IPC if {@code ipc}, else handed over in place.
     */
    ColumnarReader(byte[][] splits, String spec, byte[] arrowSchema, boolean ipc) {
        this.allocator = ArrowUtils.rootAllocator().newChildAllocator("kafkabatch reader", 0, Long.MAX_VALUE);
        NativeStream opened = null;
        try {
            opened = new NativeStream(Native.openReader(splits, spec, arrowSchema, ipc));
            if (ipc) {
                this.reader = new ArrowStreamReader(opened, allocator);
                this.root = null;
                this.loader = null;
            } else {
                this.reader = null;
                Schema schema = Schema.deserializeMessage(ByteBuffer.wrap(arrowSchema));
                this.root = VectorSchemaRoot.create(schema, allocator);
                this.loader = new VectorLoader(root);
            }
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close();
            }
            allocator.close();
            throw e;
        }
        this.stream = opened;
    }

    @Override
    public boolean next() throws IOException {
        releaseBatch();
        VectorSchemaRoot loaded;
        if (reader != null) {
            if (!reader.loadNextBatch()) {
                logLosses();
                return false;
            }
            loaded = reader.getVectorSchemaRoot();
        } else {
            long[] handed = stream.handle == 0 ? null : Native.nextBatch(stream.handle);
            if (handed == null) {
                logLosses();
                return false;
            }
            ArrowImport.load(handed, allocator, loader);
            loaded = root;
        }
        batch = handOver(loaded);
        return true;
    }

    /**
     * A batch over {@code loaded}'s buffers, moved (not copied) to new vectors so that closing them leaves
     * {@code loaded}'s vectors fit for the next load.
     */
    private ColumnarBatch handOver(VectorSchemaRoot loaded) {
        List<FieldVector> vectors = loaded.getFieldVectors();
        List<FieldVector> moved = new ArrayList<>(vectors.size());
        try {
            for (FieldVector vector : vectors) {
                TransferPair pair = vector.getTransferPair(allocator);
                pair.transfer();
                moved.add((FieldVector) pair.getTo());
            }
        } catch (RuntimeException e) {
            moved.forEach(FieldVector::close);
            throw e;
        }
        ColumnVector[] columns = new ColumnVector[moved.size()];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = new NullCountedVector(moved.get(i));
        }
        return new ColumnarBatch(columns, loaded.getRowCount());
    }

    /** Closes the batch handed out last (again, if Spark closed it: closing a vector twice is harmless). */
    private void releaseBatch() {
        if (batch != null) {
            ColumnarBatch last = batch;
            batch = null;
            last.close();
        }
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    /** Logs what the splits read so far lost ({@code mode=PERMISSIVE}), as the Python source does. */
    private void logLosses() {
        if (stream.handle != 0) {
            for (String line : Native.takeLosses(stream.handle)) {
                LOG.warn(line);
            }
        }
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        if (stream.handle != 0) {
            counts = Native.metrics(stream.handle);
        }
        return ReadMetrics.taskValues(counts);
    }

    @Override
    public void close() throws IOException {
        if (stream.handle != 0) {
            counts = Native.metrics(stream.handle);
            logLosses();
        }
        try {
            releaseBatch(); // the last batch handed out: for the hand-off, its native buffers
            if (reader != null) {
                reader.close();
            }
            if (root != null) {
                root.close();
            }
        } finally {
            stream.close();
            allocator.close();
        }
    }

    /**
     * The bytes of a native reader's IPC stream, fetched a piece at a time: a channel, so Arrow's reader
     * copies them into its buffers directly (an InputStream would go through an 8 KiB array first).
     */
    private static final class NativeStream implements ReadableByteChannel {
        private long handle;
        private byte[] piece = new byte[0];
        private int at;
        private boolean ended;

        NativeStream(long handle) {
            this.handle = handle;
        }

        /** Whether bytes are left, fetching the next piece when this one is used up. */
        private boolean fill() {
            while (at >= piece.length) {
                if (ended || handle == 0) {
                    return false;
                }
                byte[] next = Native.next(handle);
                if (next == null) {
                    ended = true;
                    return false;
                }
                piece = next;
                at = 0;
            }
            return true;
        }

        @Override
        public int read(ByteBuffer into) {
            if (!into.hasRemaining()) {
                return 0;
            }
            if (!fill()) {
                return -1;
            }
            int n = Math.min(into.remaining(), piece.length - at);
            into.put(piece, at, n);
            at += n;
            return n;
        }

        @Override
        public boolean isOpen() {
            return handle != 0;
        }

        @Override
        public void close() {
            if (handle != 0) {
                Native.close(handle);
                handle = 0;
            }
        }
    }
}
