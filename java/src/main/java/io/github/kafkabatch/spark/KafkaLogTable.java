package io.github.kafkabatch.spark;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The records of the segments under the {@code path}/{@code paths} options (batch reads and streams). */
final class KafkaLogTable implements SupportsRead {
    /** The source's schema, {@code value} typed where the options ask for it ({@link ValueSchemas}). */
    private final StructType schema;

    /** The core's resolved specs of the typed columns (null: none, or resolved by the readers). */
    private final String valueSpecs;

    KafkaLogTable(StructType schema, String valueSpecs) {
        this.schema = schema;
        this.valueSpecs = valueSpecs;
    }

    @Override
    public String name() {
        return KafkaLogSource.SHORT_NAME;
    }

    @Override
    public Column[] columns() {
        StructField[] fields = schema.fields();
        Column[] columns = new Column[fields.length];
        for (int i = 0; i < fields.length; i++) {
            columns[i] = Column.create(fields[i].name(), fields[i].dataType(), fields[i].nullable());
        }
        return columns;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new KafkaLogScanBuilder(Options.toJson(options, valueSpecs), schema);
    }
}
