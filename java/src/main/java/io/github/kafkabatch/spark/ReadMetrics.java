package io.github.kafkabatch.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The source's custom metrics, shown in Spark's UI beside the scan and summed over tasks: bytes read, records
 * read, corrupt batches skipped ({@code mode} DROPMALFORMED or PERMISSIVE) and, of those, CRC mismatches. The
 * native reader counts them ({@code Native.metrics}, in this order).
 */
public final class ReadMetrics {
    private ReadMetrics() {}

    /** The metrics the scan reports (the names its readers' task values use). */
    static CustomMetric[] supported() {
        return new CustomMetric[] {new BytesRead(), new RecordsRead(), new BatchesSkipped(), new CrcErrors()};
    }

    /** A task's values from the native counts {@code [bytes, records, skipped batches, CRC errors]}. */
    static CustomTaskMetric[] taskValues(long[] counts) {
        CustomMetric[] metrics = supported();
        CustomTaskMetric[] out = new CustomTaskMetric[metrics.length];
        for (int i = 0; i < metrics.length; i++) {
            String name = metrics[i].name();
            long value = counts == null || i >= counts.length ? 0 : counts[i];
            out[i] = new CustomTaskMetric() {
                @Override
                public String name() {
                    return name;
                }

                @Override
                public long value() {
                    return value;
                }
            };
        }
        return out;
    }

    /** Bytes of the log handed to the decoder. */
    public static final class BytesRead extends CustomSumMetric {
        /** Spark makes one by reflection to sum the tasks' values. */
        public BytesRead() {}

        @Override
        public String name() {
            return "bytesRead";
        }

        @Override
        public String description() {
            return "kafka-log bytes read";
        }
    }

    /** Records decoded (before bounds and filters). */
    public static final class RecordsRead extends CustomSumMetric {
        /** Spark makes one by reflection to sum the tasks' values. */
        public RecordsRead() {}

        @Override
        public String name() {
            return "recordsRead";
        }

        @Override
        public String description() {
            return "kafka-log records read";
        }
    }

    /** Corrupt batches dropped under mode DROPMALFORMED or PERMISSIVE. */
    public static final class BatchesSkipped extends CustomSumMetric {
        /** Spark makes one by reflection to sum the tasks' values. */
        public BatchesSkipped() {}

        @Override
        public String name() {
            return "batchesSkipped";
        }

        @Override
        public String description() {
            return "kafka-log corrupt batches skipped";
        }
    }

    /** Batches skipped because their stored CRC did not match their bytes. */
    public static final class CrcErrors extends CustomSumMetric {
        /** Spark makes one by reflection to sum the tasks' values. */
        public CrcErrors() {}

        @Override
        public String name() {
            return "crcErrors";
        }

        @Override
        public String description() {
            return "kafka-log CRC errors";
        }
    }
}
