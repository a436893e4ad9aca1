package io.github.kafkabatch.spark;

import java.io.IOException;
import java.io.InputStream;
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
 * pulls the pieces as Arrow Java reads); each batch is valid until the next call to {@link #next}.
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

    /** The bytes of a native reader's IPC stream, fetched a piece at a time. */
    private static final class NativeStream extends InputStream {
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
        public int read() {
            return fill() ? piece[at++] & 0xff : -1;
        }

        @Override
        public int read(byte[] into, int offset, int length) {
            if (length == 0) {
                return 0;
            }
            if (!fill()) {
                return -1;
            }
            int n = Math.min(length, piece.length - at);
            System.arraycopy(piece, at, into, offset, n);
            at += n;
            return n;
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
