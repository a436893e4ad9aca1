package io.github.kafkabatch.spark;

import java.util.OptionalLong;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/**
 * One read: the core plans it on the driver (its splits become input partitions) and executors read
 * the splits in columnar batches.
 */
final class KafkaLogScan implements ScanBuilder, Scan, Batch, SupportsReportStatistics {
    private final String optionsJson;
    private InputPartition[] partitions;
    private long plannedBytes;

    KafkaLogScan(String optionsJson) {
        this.optionsJson = optionsJson;
    }

    @Override
    public Scan build() {
        return this;
    }

    @Override
    public StructType readSchema() {
        return KafkaLogSource.SCHEMA;
    }

    @Override
    public String description() {
        return KafkaLogSource.SHORT_NAME + " " + optionsJson;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        return new KafkaLogStream(optionsJson);
    }

    @Override
    public ColumnarSupportMode columnarSupportMode() {
        return ColumnarSupportMode.SUPPORTED;
    }

    @Override
    public synchronized InputPartition[] planInputPartitions() {
        if (partitions == null) {
            byte[][] splits = Native.planSplits(optionsJson);
            InputPartition[] planned = new InputPartition[splits.length];
            long bytes = 0;
            for (int i = 0; i < splits.length; i++) {
                planned[i] = new KafkaLogPartition(new byte[][] {splits[i]});
                bytes += Native.splitBytes(splits[i]);
            }
            partitions = planned;
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

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new KafkaLogReaderFactory(optionsJson);
    }
}
