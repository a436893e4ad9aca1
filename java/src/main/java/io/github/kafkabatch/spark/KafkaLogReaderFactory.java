package io.github.kafkabatch.spark;

import java.util.Iterator;
import java.util.Locale;

import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Makes the executors' readers: columnar; rows (where Spark asks for them) come from the same batches. Made on
 * the driver, where it fixes the batches' Arrow schema (Spark's {@code ArrowUtils} form of the read schema in
 * the session's time zone) and the transport ({@value #TRANSFER}: {@code zero-copy}, the default, or {@code
 * ipc}, a Spark SQL conf of the session).
 */
final class KafkaLogReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    /** The Spark conf choosing how batches cross from the native reader: {@code zero-copy} or {@code ipc}. */
    static final String TRANSFER = "spark.kafkabatch.arrowTransfer";

    private final String spec;
    private final byte[] arrowSchema;
    private final boolean ipc;
    /** The Hadoop configuration of remote roots read through Hadoop's FileSystem; null when none is. */
    private final Broadcast<SerializableConfiguration> hadoop;

    /** A factory of readers of the columns of {@code readSchema} (the scan's, after pruning). */
    KafkaLogReaderFactory(String spec, StructType readSchema) {
        SQLConf conf = SQLConf.get();
        // (schema, time zone, largeVarTypes): Binary and Utf8 with 32-bit offsets, as the core builds them
        this.spec = spec;
        this.hadoop = HadoopStorage.broadcastFor(spec);
        this.arrowSchema = ArrowUtils.toArrowSchema(readSchema, conf.sessionLocalTimeZone(), false).serializeAsMessage();
        String transfer = conf.getConfString(TRANSFER, "zero-copy").trim().toLowerCase(Locale.ROOT);
        switch (transfer) {
            case "zero-copy" -> this.ipc = false;
            case "ipc" -> this.ipc = true;
            default -> throw new IllegalArgumentException(
                TRANSFER + " must be zero-copy or ipc, not '" + conf.getConfString(TRANSFER, "") + "'");
        }
    }

    private ColumnarReader open(InputPartition partition) {
        byte[][] splits = ((KafkaLogPartition) partition).splits();
        return HadoopStorage.opening(hadoop, () -> new ColumnarReader(splits, spec, arrowSchema, ipc));
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return open(partition);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        ColumnarReader batches = open(partition);
        return new PartitionReader<>() {
            private Iterator<InternalRow> rows = java.util.Collections.emptyIterator();
            private InternalRow current;

            @Override
            public boolean next() throws java.io.IOException {
                while (!rows.hasNext()) {
                    if (!batches.next()) {
                        return false;
                    }
                    rows = batches.get().rowIterator();
                }
                current = rows.next();
                return true;
            }

            @Override
            public InternalRow get() {
                return current;
            }

            @Override
            public void close() throws java.io.IOException {
                batches.close();
            }
        };
    }
}
