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
     * Checks the options as {@link #checkOptions} does and resolves the typed columns they ask for (a schema
     * registry is asked here): an Arrow IPC schema of those columns in the Arrow types Spark reads, the core's
     * resolved specs in its metadata; null when no column is typed.
     */
    static native byte[] readColumns(String optionsJson);

    /**
     * The scan's splits (the core's serialised {@code Split}s) in topic, partition, offset order, packed
     * into tasks (one array each); {@code spec} is the read as {@link KafkaLogScanBuilder} writes it,
     * {@code defaultMinPartitions} stands in for an unset {@code minPartitions}.
     */
    static native byte[][][] planTasks(String spec, int defaultMinPartitions);

    /**
     * As {@link #planTasks}, the tasks balanced by what {@link #splitAggregates} costs (legacy message sets
     * decompressed, v2 batches' headers walked) rather than by decoding.
     */
    static native byte[][][] planAggregateTasks(String spec, int defaultMinPartitions);

    /** How the core takes each of a JSON array of marshalled predicates ({@link Predicates}): 0, 1 or 2. */
    static native String pushPredicates(String predicatesJson);

    /** Aggregates of a read from batch headers: JSON {@code {"rows": [...]}}, or {@code {"why": text}}. */
    static native String headerAggregates(String spec, String aggregates, String groupBy);

    /**
     * One task's partial aggregates of its splits (from {@link #planTasks} of the same spec), as
     * {@link #headerAggregates}' rows JSON: a row per group of these splits (a row of all, even of none).
     */
    static native String splitAggregates(byte[][] splits, String spec, String aggregates, String groupBy);

    /**
     * The read's {@code fs.*} options as name, value pairs when it reads a remote root through Hadoop's
     * FileSystem (option {@code storage}), else null.
     */
    static native String[] hadoopOptions(String spec);

    /** The bytes of the segment a split covers. */
    static native long splitBytes(byte[] split);

    /**
     * A reader of splits from {@link #planTasks} (the same spec) whose batches have exactly the columns of
     * {@code arrowSchema} (an Arrow IPC schema message); a handle for {@link #next} (if {@code ipc}) or
     * {@link #nextBatch}, and {@link #close}.
     */
    static native long openReader(byte[][] splits, String spec, byte[] arrowSchema, boolean ipc);

    /** The next bytes of the reader's Arrow IPC stream, or null after its end. */
    static native byte[] next(long reader);

    /** Frees a reader; the handle is invalid afterwards. */
    static native void close(long reader);

    /**
     * The reader's next batch handed over in place, or null after the last: {@code [handle, rows, node count,
     * (length, null count)…, buffer count, (address, size)…]} (see {@link ArrowImport}).
     */
    static native long[] nextBatch(long reader);

    /** Frees a batch from {@link #nextBatch}: its buffers are invalid afterwards. */
    static native void release(long batch);

    /** The reader's counts so far: bytes read, records read, corrupt batches skipped, CRC errors. */
    static native long[] metrics(long reader);

    /**
     * The log lines ({@code mode=PERMISSIVE} only) of the splits read to their end since the last call that lost
     * batches or bytes.
     */
    static native String[] takeLosses(long reader);

    /** Readers and batches the JVM holds and has not closed or released (for leak tests). */
    static native long liveHandles();

    /** The driver's state of a stream of the read {@code spec}; a handle for the other stream calls. */
    static native long streamOpen(String spec);

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

    /**
     * The splits (the core's serialised {@code Split}s) of the micro-batch from {@code start} to {@code end},
     * packed into tasks as {@link #planTasks} packs a batch read's.
     */
    static native byte[][][] streamPlanTasks(long stream, String start, String end, int defaultMinPartitions);

    /** A micro-batch up to {@code end} was committed. */
    static native void streamCommit(long stream, String end);

    /** Frees the stream's state; the handle is invalid afterwards. */
    static native void streamClose(long stream);
}
