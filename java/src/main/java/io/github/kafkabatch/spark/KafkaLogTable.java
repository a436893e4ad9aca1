package io.github.kafkabatch.spark;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The records of the segments under the {@code path}/{@code paths} options (batch reads). */
final class KafkaLogTable implements SupportsRead {
    @Override
    public String name() {
        return KafkaLogSource.SHORT_NAME;
    }

    @Override
    public Column[] columns() {
        StructField[] fields = KafkaLogSource.SCHEMA.fields();
        Column[] columns = new Column[fields.length];
        for (int i = 0; i < fields.length; i++) {
            columns[i] = Column.create(fields[i].name(), fields[i].dataType(), fields[i].nullable());
        }
        return columns;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new KafkaLogScanBuilder(Options.toJson(options));
    }
}
