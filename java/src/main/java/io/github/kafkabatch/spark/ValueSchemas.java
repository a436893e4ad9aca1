package io.github.kafkabatch.spark;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The read schema of typed values: {@link KafkaLogSource#SCHEMA} with {@code value} of the type {@code valueFormat}
 * and {@code valueSchema} give it. JSON with a Spark DDL {@code valueSchema} for now (parsed by Spark itself, every
 * field nullable, as the Python source types it); the core parses the values into that type's Arrow form.
 */
final class ValueSchemas {
    private ValueSchemas() {}

    /** The read schema the options ask for (the core checks the value options themselves). */
    static StructType readSchema(CaseInsensitiveStringMap options) {
        String format = options.get("valueFormat");
        String ddl = options.get("valueSchema");
        if (format == null || ddl == null || !format.trim().equalsIgnoreCase("json")) {
            return KafkaLogSource.SCHEMA;
        }
        DataType value = nullable(StructType.fromDDL(ddl));
        StructField[] fields = KafkaLogSource.SCHEMA.fields().clone();
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equals("value")) {
                fields[i] = new StructField("value", value, true, fields[i].metadata());
            }
        }
        return new StructType(fields);
    }

    /** {@code type} with every field, element and map value nullable. */
    private static DataType nullable(DataType type) {
        if (type instanceof StructType struct) {
            StructField[] fields = struct.fields().clone();
            for (int i = 0; i < fields.length; i++) {
                fields[i] = new StructField(fields[i].name(), nullable(fields[i].dataType()), true, fields[i].metadata());
            }
            return new StructType(fields);
        }
        if (type instanceof ArrayType array) {
            return new ArrayType(nullable(array.elementType()), true);
        }
        if (type instanceof MapType map) {
            return new MapType(map.keyType(), nullable(map.valueType()), true);
        }
        return type;
    }
}
