package io.github.kafkabatch.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The read schema of typed values and keys: {@link KafkaLogSource#SCHEMA} with {@code value} and {@code key} of the
 * types the value options give them, and the columns option {@code internalTopic} decodes appended. The core decides ({@code Native.readColumns}: formats, schemas, the registry,
 * the Python source's checks and errors) and gives each typed column's Arrow type; Spark's own {@code ArrowUtils}
 * makes it a Spark type (every field nullable, as the Python source types it). A JSON column typed by Spark text
 * (DDL, StructType JSON) is read by Spark's parser here.
 */
final class ValueSchemas {
    /** The field metadata key of a Spark-typed JSON column's schema text (bindings/jni values.rs). */
    private static final String SPARK_SCHEMA = "kafkabatch.sparkSchema";

    /** The schema metadata key of the resolved specs. */
    private static final String SPECS = "kafkabatch.values";

    private ValueSchemas() {}

    /** The read schema and the core's resolved specs of its typed columns (null when none is typed). */
    record Resolved(StructType schema, String specs) {}

    /** Checks the options (as planning would) and resolves the typed columns they ask for. */
    static Resolved resolve(CaseInsensitiveStringMap options) {
        byte[] message = Native.readColumns(Options.toJson(options, null));
        if (message == null) {
            return new Resolved(KafkaLogSource.SCHEMA, null);
        }
        Schema arrow;
        try {
            arrow = MessageSerializer.deserializeSchema(
                new ReadChannel(Channels.newChannel(new ByteArrayInputStream(message))));
        } catch (IOException e) {
            throw new IllegalStateException("the core's typed columns are an Arrow IPC schema", e);
        }
        Map<String, DataType> typed = new LinkedHashMap<>();
        for (Field field : arrow.getFields()) {
            String text = field.getMetadata() == null ? null : field.getMetadata().get(SPARK_SCHEMA);
            DataType type = text != null ? sparkType(field.getName(), text) : ArrowUtils.fromArrowField(field);
            typed.put(field.getName(), nullable(type));
        }
        List<StructField> fields = new ArrayList<>();
        for (StructField f : KafkaLogSource.SCHEMA.fields()) {
            DataType type = typed.remove(f.name());
            fields.add(type == null ? f : new StructField(f.name(), type, true, f.metadata()));
        }
        // the rest are the columns internalTopic decodes, appended in the core's order
        typed.forEach((name, type) -> fields.add(new StructField(name, type, true, Metadata.empty())));
        return new Resolved(new StructType(fields.toArray(new StructField[0])), arrow.getCustomMetadata().get(SPECS));
    }

    /** A {@code valueSchema}/{@code keySchema} in Spark's words: DDL or StructType JSON. */
    private static DataType sparkType(String column, String text) {
        String trimmed = text.trim();
        try {
            return trimmed.startsWith("{") ? DataType.fromJson(trimmed) : DataType.fromDDL(trimmed);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(column + "Schema: not a Spark schema (DDL or StructType JSON): "
                + e.getMessage(), e);
        }
    }

    /** {@code type} with every field, element, map key and value nullable. */
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
            return new MapType(nullable(map.keyType()), nullable(map.valueType()), true);
        }
        return type;
    }
}
