package io.github.kafkabatch.spark;

import java.util.OptionalLong;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/**
 * One read, as {@link KafkaLogScanBuilder} left it: the core plans it on the driver (its splits packed
 * into tasks, one input partition each) and executors read the splits in columnar batches of the
 * columns asked for.
 */
final class KafkaLogScan implements Scan, Batch, SupportsReportStatistics {
    /** The read as the core takes it: options, columns, pushed predicates, limit (bindings/jni pushdown). */
    private final String spec;
    private final StructType schema;
    private final String description;
    private InputPartition[] partitions;
    private long plannedBytes;

    KafkaLogScan(String spec, StructType schema, String description) {
        this.spec = spec;
        this.schema = schema;
        this.description = description;
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        return new KafkaLogStream(spec, schema);
    }

    @Override
    public ColumnarSupportMode columnarSupportMode() {
        return ColumnarSupportMode.SUPPORTED;
    }

    @Override
    public synchronized InputPartition[] planInputPartitions() {
        if (partitions == null) {
            // minPartitions' default: Spark's default parallelism (the cores of local[N])
            byte[][][] tasks = Native.planTasks(spec, SparkContext.getOrCreate().defaultParallelism());
            long bytes = 0;
            for (byte[][] task : tasks) {
                for (byte[] split : task) {
                    bytes += Native.splitBytes(split);
                }
            }
            partitions = KafkaLogPartition.of(tasks);
            plannedBytes = bytes;
        }
        return partitions.clone();
    }

    /** The planned segments' bytes (the scan is planned here, once: Spark asks before it plans tasks). */
    @Override
    public Statistics estimateStatistics() {
        planInputPartitions();
        long bytes;
        synchronized (this) {
            bytes = plannedBytes;
        }
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(bytes);
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.empty();
            }
        };
    }

    /** Bytes and records read, corrupt batches skipped, CRC errors ({@link ReadMetrics}). */
    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return ReadMetrics.supported();
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new KafkaLogReaderFactory(spec, readSchema());
    }
}
