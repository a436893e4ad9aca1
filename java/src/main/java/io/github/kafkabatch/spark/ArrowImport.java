package io.github.kafkabatch.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;

/**
 * Loads a record batch the native reader hands over in place ({@code Native.nextBatch}) into a
 * {@code VectorSchemaRoot}, without copying its buffers: each native buffer becomes an {@link ArrowBuf} over
 * a {@link ForeignAllocation}, as Arrow's C data importer does. The batch's native handle is released
 * ({@code Native.release}) when the last of its buffers is.
 */
final class ArrowImport {
    private ArrowImport() {}

    /**
     * Loads the batch {@code d} describes ({@code [handle, rows, node count, (length, null count)…, buffer
     * count, (address, size)…]}, the nodes in pre-order and the buffers in Arrow IPC order) with {@code loader};
     * returns its row count.
     */
    static int load(long[] d, BufferAllocator allocator, VectorLoader loader) {
        Owner owner = new Owner(d[0]);
        List<ArrowBuf> buffers = new ArrayList<>();
        try {
            int rows = Math.toIntExact(d[1]);
            int nodeCount = Math.toIntExact(d[2]);
            List<ArrowFieldNode> nodes = new ArrayList<>(nodeCount);
            int at = 3;
            for (int i = 0; i < nodeCount; i++, at += 2) {
                nodes.add(new ArrowFieldNode(d[at], d[at + 1]));
            }
            int bufferCount = Math.toIntExact(d[at++]);
            for (int i = 0; i < bufferCount; i++, at += 2) {
                long address = d[at];
                long size = d[at + 1];
                if (size == 0) {
                    buffers.add(allocator.getEmpty());
                } else {
                    owner.hold();
                    buffers.add(allocator.wrapForeignAllocation(new NativeBuffer(owner, size, address)));
                }
            }
            try (ArrowRecordBatch batch = new ArrowRecordBatch(rows, nodes, buffers)) {
                loader.load(batch);
            }
            return rows;
        } finally {
            // the vectors hold what they loaded; this method's own references go
            for (ArrowBuf buffer : buffers) {
                buffer.getReferenceManager().release();
            }
            owner.letGo();
        }
    }

    /** A native batch shared by its buffers (and by the loading call while it runs). */
    private static final class Owner {
        private final long handle;
        private final AtomicInteger holders = new AtomicInteger(1);

        Owner(long handle) {
            this.handle = handle;
        }

        void hold() {
            holders.incrementAndGet();
        }

        void letGo() {
            if (holders.decrementAndGet() == 0) {
                Native.release(handle);
            }
        }
    }

    /** One native buffer, released with its batch's other buffers. */
    private static final class NativeBuffer extends ForeignAllocation {
        private final Owner owner;

        NativeBuffer(Owner owner, long size, long address) {
            super(size, address);
            this.owner = owner;
        }

        @Override
        protected void release0() {
            owner.letGo();
        }
    }
}
