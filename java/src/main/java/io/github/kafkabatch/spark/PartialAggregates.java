package io.github.kafkabatch.spark;

import java.util.Iterator;
import java.util.List;

import org.apache.spark.SparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * A pushed aggregation the batch headers don't answer whole ({@link HeaderAggregates}), pushed partially: the
 * read's splits are planned into tasks as for a read (balanced by what aggregating them costs), and each task returns its partial rows, one per group of
 * its splits ({@code Native.splitAggregates}: each split from its batch headers where they answer exactly, else
 * from its records, counted by the core without building their values). Spark's final aggregation adds them
 * up: counts summed, the minimum of the minimums and the maximum of the maximums.
 */
final class PartialAggregates implements Scan, Batch {
    /** The read as the core takes it, without columns (the aggregates pick the few the core builds). */
    private final String spec;

    private final StructType schema;
    private final String description;
    private final String aggregates;
    private final String grouping;
    private final List<String> groupBy;
    private InputPartition[] partitions;

    /**
     * {@code aggregates}: the core's names, comma-separated, in Spark's order; {@code grouping} the core's
     * ({@code all}, {@code topic}, {@code partition}); {@code groupBy} the group-by columns in Spark's order.
     */
    PartialAggregates(
            String spec,
            StructType schema,
            String description,
            String aggregates,
            String grouping,
            List<String> groupBy) {
        this.spec = spec;
        this.schema = schema;
        this.description = description;
        this.aggregates = aggregates;
        this.grouping = grouping;
        this.groupBy = List.copyOf(groupBy);
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
    public synchronized InputPartition[] planInputPartitions() {
        if (partitions == null) {
            byte[][][] tasks = Native.planAggregateTasks(spec, SparkContext.getOrCreate().defaultParallelism());
            if (tasks.length == 0) {
                // a global aggregate of nothing still has its row: COUNT 0, and NULL minimums and maximums
                tasks = new byte[][][] {new byte[0][]};
            }
            partitions = KafkaLogPartition.of(tasks);
        }
        return partitions.clone();
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new Readers(spec, aggregates, grouping, groupBy, HadoopStorage.broadcastFor(spec));
    }

    /** Makes each task's reader of its partial rows. */
    private static final class Readers implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;

        private final String spec;
        private final String aggregates;
        private final String grouping;
        private final List<String> groupBy;
        /** The Hadoop configuration of remote roots read through Hadoop's FileSystem; null when none is. */
        private final Broadcast<SerializableConfiguration> hadoop;

        Readers(
                String spec,
                String aggregates,
                String grouping,
                List<String> groupBy,
                Broadcast<SerializableConfiguration> hadoop) {
            this.spec = spec;
            this.aggregates = aggregates;
            this.grouping = grouping;
            this.groupBy = groupBy;
            this.hadoop = hadoop;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            byte[][] splits = ((KafkaLogPartition) partition).splits();
            int count = aggregates.split(",").length;
            // the task's work happens here, in the core: the partial rows are few (a group each)
            String partial = HadoopStorage.opening(
                    hadoop, () -> Native.splitAggregates(splits, spec, aggregates, grouping));
            List<InternalRow> rows = HeaderAggregates.rowsOf(HeaderAggregates.json(partial), groupBy, count);
            Iterator<InternalRow> it = rows.iterator();
            return new PartitionReader<>() {
                private InternalRow current;

                @Override
                public boolean next() {
                    if (!it.hasNext()) {
                        return false;
                    }
                    current = it.next();
                    return true;
                }

                @Override
                public InternalRow get() {
                    return current;
                }

                @Override
                public void close() {}
            };
        }
    }
}
