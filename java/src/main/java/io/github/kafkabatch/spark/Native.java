package io.github.kafkabatch.spark;

/**
 * The native methods of the JNI library (bindings/jni). Failures arrive as
 * {@link IllegalArgumentException} (a bad option, in the option's words),
 * {@link java.io.FileNotFoundException} (nothing at a path) or {@link KafkaBatchException}.
 */
final class Native {
    static {
        NativeLoader.load();
    }

    private Native() {}

    /** Throws {@link IllegalArgumentException} for the options' first error (names, values), as planning would. */
    static native void checkOptions(String optionsJson);

    /** The scan's splits (the core's serialised {@code Split}s) in topic, partition, offset order. */
    static native byte[][] planSplits(String optionsJson);

    /** The bytes of the segment a split covers. */
    static native long splitBytes(byte[] split);

    /** A reader of splits from {@link #planSplits}; a handle for {@link #next} and {@link #close}. */
    static native long openReader(byte[][] splits, String optionsJson);

    /** The next bytes of the reader's Arrow IPC stream, or null after its end. */
    static native byte[] next(long reader);

    /** Frees a reader; the handle is invalid afterwards. */
    static native void close(long reader);
}
