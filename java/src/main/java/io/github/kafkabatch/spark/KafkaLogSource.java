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
        // Called by load(): bad options fail there, as with the Python source, not at the first action.
        Native.checkOptions(Options.toJson(options));
        return ValueSchemas.readSchema(options);
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new KafkaLogTable(schema);
    }
}
