package io.github.kafkabatch.spark;

import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Makes the executors' readers: columnar; rows (where Spark asks for them) come from the same batches. */
final class KafkaLogReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final String optionsJson;

    KafkaLogReaderFactory(String optionsJson) {
        this.optionsJson = optionsJson;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new ColumnarReader(((KafkaLogPartition) partition).splits(), optionsJson);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        ColumnarReader batches = new ColumnarReader(((KafkaLogPartition) partition).splits(), optionsJson);
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
