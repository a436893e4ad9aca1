package io.github.kafkabatch.spark;

/** What the native library holds for the JVM, for tests and debugging. */
public final class Diagnostics {
    private Diagnostics() {}

    /**
     * Readers and record batches the JVM holds handles to and has not closed or released: zero in a JVM where
     * no read is running (a leak otherwise).
     */
    public static long liveHandles() {
        return Native.liveHandles();
    }
}
