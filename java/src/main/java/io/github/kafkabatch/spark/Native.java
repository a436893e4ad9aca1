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

    /** The driver's state of a stream with these options; a handle for the other stream calls. */
    static native long streamOpen(String optionsJson);

    /** {@code maxOffsetsPerTrigger}, or -1. */
    static native long streamMaxOffsets(long stream);

    /** {@code maxBytesPerTrigger} in bytes, or -1. */
    static native long streamMaxBytes(long stream);

    /** The stream's first offsets ({@code startingOffsets}), as offsets JSON. */
    static native String streamInitialOffset(long stream);

    /** The end of the next micro-batch from {@code start} under the limits (below 0: none). */
    static native String streamLatestOffset(long stream, String start, long maxRows, long maxBytes);

    /** The offsets available at the last look, or null. */
    static native String streamReportLatest(long stream);

    /** {@code Trigger.AvailableNow}: stop at what is available now. */
    static native void streamPrepareAvailableNow(long stream);

    /** The splits (the core's serialised {@code Split}s) of the micro-batch from {@code start} to {@code end}. */
    static native byte[][] streamPlan(long stream, String start, String end);

    /** A micro-batch up to {@code end} was committed. */
    static native void streamCommit(long stream, String end);

    /** Frees the stream's state; the handle is invalid afterwards. */
    static native void streamClose(long stream);
}
