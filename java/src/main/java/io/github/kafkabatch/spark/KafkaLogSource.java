package io.github.kafkabatch.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code kafka-log} data source: Kafka log segments (broker log dirs, {@code <topic>-<partition>}
 * folders, segment files) read by kafkabatch's Rust core, with the schema of Spark's Kafka source.
 * {@link KafkaLogJvmSource} is the same source under the name {@code kafka-log-jvm}.
 *
 * <pre>{@code spark.read.format("kafka-log").load("/var/lib/kafka/data")}</pre>
 */
public class KafkaLogSource implements TableProvider, DataSourceRegister {
    /** The short name of {@code format(...)} and {@code USING}. */
    public static final String SHORT_NAME = "kafka-log";

    /** Spark's Kafka source schema (with {@code includeHeaders}), every field nullable. */
    public static final StructType SCHEMA = new StructType(new StructField[] {
        field("key", DataTypes.BinaryType),
        field("value", DataTypes.BinaryType),
        field("topic", DataTypes.StringType),
        field("partition", DataTypes.IntegerType),
        field("offset", DataTypes.LongType),
        field("timestamp", DataTypes.TimestampType),
        field("timestampType", DataTypes.IntegerType),
        field("headers", new ArrayType(new StructType(new StructField[] {
            field("key", DataTypes.StringType), field("value", DataTypes.BinaryType)}), true)),
    });

    /** The value options resolved by {@link #inferSchema}, if it was called. */
    private ValueSchemas.Resolved resolved;

    /** A source; Spark makes one per lookup. */
    public KafkaLogSource() {}

    private static StructField field(String name, org.apache.spark.sql.types.DataType type) {
        return DataTypes.createStructField(name, type, true);
    }

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        // Called by load(): bad options fail there, as with the Python source, not at the first action;
        // a schema registry is asked here, once, and its schemas travel to the executors with the table.
        resolved = ValueSchemas.resolve(options);
        return resolved.schema();
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        // Spark asks the same source instance for the schema, then the table (none when the user gave a schema:
        // the readers then resolve the value options themselves)
        return new KafkaLogTable(schema, resolved == null ? null : resolved.specs());
    }
}
