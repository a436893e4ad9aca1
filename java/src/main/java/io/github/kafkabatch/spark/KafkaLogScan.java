package io.github.kafkabatch.spark;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * One read: the core plans it on the driver (its splits become input partitions) and executors read
 * the splits in columnar batches.
 */
final class KafkaLogScan implements ScanBuilder, Scan, Batch {
    private final String optionsJson;
    private InputPartition[] partitions;

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
    public ColumnarSupportMode columnarSupportMode() {
        return ColumnarSupportMode.SUPPORTED;
    }

    @Override
    public synchronized InputPartition[] planInputPartitions() {
        if (partitions == null) {
            byte[][] splits = Native.planSplits(optionsJson);
            InputPartition[] planned = new InputPartition[splits.length];
            for (int i = 0; i < splits.length; i++) {
                planned[i] = new KafkaLogPartition(new byte[][] {splits[i]});
            }
            partitions = planned;
        }
        return partitions.clone();
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new KafkaLogReaderFactory(optionsJson);
    }
}
