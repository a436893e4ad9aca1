package io.github.kafkabatch.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads splits through the core into {@link ColumnarBatch}es of {@link ArrowColumnVector}s. The core's
 * record batches arrive as an Arrow IPC stream (the native reader writes it piece by piece, this class
 * pulls the pieces as Arrow Java reads, straight into Arrow's buffers); each batch is valid until the next
 * call to {@link #next}.
 */
final class ColumnarReader implements PartitionReader<ColumnarBatch> {
    private final BufferAllocator allocator;
    private final NativeStream stream;
    private final ArrowStreamReader reader;
    private ColumnarBatch batch;

    ColumnarReader(byte[][] splits, String optionsJson) {
        long handle = Native.openReader(splits, optionsJson);
        this.stream = new NativeStream(handle);
        this.allocator = ArrowUtils.rootAllocator().newChildAllocator("kafkabatch reader", 0, Long.MAX_VALUE);
        this.reader = new ArrowStreamReader(stream, allocator);
    }

    @Override
    public boolean next() throws IOException {
        if (!reader.loadNextBatch()) {
            return false;
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        List<FieldVector> vectors = root.getFieldVectors();
        ColumnVector[] columns = new ColumnVector[vectors.size()];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = new ArrowColumnVector(vectors.get(i));
        }
        batch = new ColumnarBatch(columns, root.getRowCount());
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() throws IOException {
        try {
            reader.close();
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
