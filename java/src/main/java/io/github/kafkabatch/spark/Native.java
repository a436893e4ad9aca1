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

    /**
     * The scan's splits (the core's serialised {@code Split}s) in topic, partition, offset order, packed
     * into tasks (one array each); {@code spec} is the read as {@link KafkaLogScanBuilder} writes it,
     * {@code defaultMinPartitions} stands in for an unset {@code minPartitions}.
     */
    static native byte[][][] planTasks(String spec, int defaultMinPartitions);

    /** How the core takes each of a JSON array of marshalled predicates ({@link Predicates}): 0, 1 or 2. */
    static native String pushPredicates(String predicatesJson);

    /** Aggregates of a read from batch headers: JSON {@code {"rows": [...]}}, or {@code {"why": text}}. */
    static native String headerAggregates(String spec, String aggregates, String groupBy);

    /** The bytes of the segment a split covers. */
    static native long splitBytes(byte[] split);

    /** A reader of splits from {@link #planTasks} (the same spec); a handle for {@link #next} and {@link #close}. */
    static native long openReader(byte[][] splits, String spec);

    /** The next bytes of the reader's Arrow IPC stream, or null after its end. */
    static native byte[] next(long reader);

    /** Frees a reader; the handle is invalid afterwards. */
    static native void close(long reader);
}
