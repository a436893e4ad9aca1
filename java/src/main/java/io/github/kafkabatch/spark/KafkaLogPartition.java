package io.github.kafkabatch.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** The splits one task reads: the core's serialised {@code Split}s, read in order. */
final class KafkaLogPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    private final byte[][] splits;

    KafkaLogPartition(byte[][] splits) {
        this.splits = splits;
    }

    byte[][] splits() {
        return splits;
    }

    /** The core's planned tasks ({@code Native.planTasks} and its kin), a partition each, in order. */
    static KafkaLogPartition[] of(byte[][][] tasks) {
        KafkaLogPartition[] partitions = new KafkaLogPartition[tasks.length];
        for (int i = 0; i < tasks.length; i++) {
            partitions[i] = new KafkaLogPartition(tasks[i]);
        }
        return partitions;
    }
}
