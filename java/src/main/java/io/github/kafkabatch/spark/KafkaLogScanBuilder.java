package io.github.kafkabatch.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * What Spark pushes into one read: the columns it needs (the core builds only those), its predicates
 * (the core decides which it takes, and which exactly; the rest Spark evaluates on the rows), a limit
 * (each task stops after that many rows) and aggregates (answered from batch headers on the driver, or
 * partially in tasks where the headers don't answer them whole). Each builder is one
 * read: nothing pushed here reaches another query of the same DataFrame.
 */
final class KafkaLogScanBuilder
        implements ScanBuilder,
                SupportsPushDownRequiredColumns,
                SupportsPushDownV2Filters,
                SupportsPushDownLimit,
                SupportsPushDownAggregates {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** How the core takes a predicate (bindings/jni pushdown): not at all, only narrowing, exactly. */
    private static final int NOT_PUSHED = 0;

    private static final int EXACT = 2;

    private final String optionsJson;
    /** The table's schema: {@code value} typed where the options ask for it ({@link ValueSchemas}). */
    private final StructType table;
    private StructType schema;
    private final List<Predicate> pushed = new ArrayList<>();
    private final ArrayNode pushedJson = JSON.createArrayNode();
    private Integer limit;
    /** The last aggregation asked about (null: one the headers never answer), and whether they answer it whole. */
    private HeaderAggregates asked;

    private boolean complete;
    /** The aggregation Spark pushed: answered on the driver (complete), or for the tasks (partial). */
    private HeaderAggregates aggregates;

    private boolean pushedComplete;

    KafkaLogScanBuilder(String optionsJson, StructType table) {
        this.optionsJson = optionsJson;
        this.table = table;
        this.schema = table;
    }

    /** The read as the core takes it: options, columns, pushed predicates and limit (bindings/jni pushdown). */
    private String spec(boolean withColumns) {
        ObjectNode spec = JSON.createObjectNode();
        try {
            spec.set("options", JSON.readTree(optionsJson));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the options are JSON written by Options.toJson", e);
        }
        if (withColumns) {
            ArrayNode columns = spec.putArray("columns");
            for (StructField f : schema.fields()) {
                columns.add(f.name());
            }
        }
        spec.set("predicates", pushedJson);
        if (limit != null) {
            spec.put("limit", limit);
        }
        return spec.toString();
    }

    @Override
    public void pruneColumns(StructType required) {
        // Spark's schema order, the core's column order; whole columns (a header struct is read whole)
        Set<String> names = new HashSet<>();
        for (StructField f : required.fields()) {
            names.add(f.name());
        }
        List<StructField> kept = new ArrayList<>();
        for (StructField f : table.fields()) {
            if (names.contains(f.name())) {
                kept.add(f);
            }
        }
        schema = new StructType(kept.toArray(new StructField[0]));
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        // a typed value's predicates are about the parsed value, not the record's bytes: Spark's
        boolean typedValue = !KafkaLogSource.SCHEMA.apply("value").dataType().equals(table.apply("value").dataType());
        ArrayNode marshalled = JSON.createArrayNode();
        for (Predicate p : predicates) {
            marshalled.add(typedValue && refersToValue(p) ? JSON.createObjectNode() : Predicates.marshal(p));
        }
        JsonNode taken;
        try {
            taken = JSON.readTree(Native.pushPredicates(marshalled.toString()));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the core answers JSON", e);
        }
        List<Predicate> rest = new ArrayList<>();
        for (int i = 0; i < predicates.length; i++) {
            int how = taken.get(i).asInt(NOT_PUSHED);
            if (how != NOT_PUSHED) {
                pushed.add(predicates[i]);
                pushedJson.add(marshalled.get(i));
            }
            if (how != EXACT) {
                rest.add(predicates[i]);
            }
        }
        return rest.toArray(new Predicate[0]);
    }

    private static boolean refersToValue(Predicate p) {
        for (org.apache.spark.sql.connector.expressions.NamedReference r : p.references()) {
            if (r.fieldNames().length > 0 && r.fieldNames()[0].equals("value")) {
                return true;
            }
        }
        return false;
    }

    @Override
    public Predicate[] pushedPredicates() {
        return pushed.toArray(new Predicate[0]);
    }

    @Override
    public boolean pushLimit(int rows) {
        limit = rows;
        return true;
    }

    /** Spark still limits the rows of all tasks: each task stops after {@code limit} rows. */
    @Override
    public boolean isPartiallyPushed() {
        return true;
    }

    /** Whether the headers answer {@code aggregation} whole: asked here, once, and remembered for the build. */
    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        return ask(aggregation) != null && complete;
    }

    /**
     * Takes every aggregation of the kinds the core answers: whole from the headers (rows on the driver,
     * no task), else partially (each task aggregates its splits, Spark adds the partial rows up).
     */
    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        aggregates = ask(aggregation);
        pushedComplete = complete;
        return aggregates != null;
    }

    private HeaderAggregates ask(Aggregation aggregation) {
        HeaderAggregates question = HeaderAggregates.of(aggregation);
        if (question == null) {
            return null;
        }
        if (asked == null || !asked.sameQuestion(question)) {
            complete = question.answer(spec(false));
            asked = question;
        }
        return asked.declined() ? null : asked;
    }

    @Override
    public Scan build() {
        String description = KafkaLogSource.SHORT_NAME + " " + optionsJson;
        if (!pushed.isEmpty()) {
            description += " pushed=" + pushed;
        }
        if (aggregates != null) {
            return pushedComplete ? aggregates.scan(description) : aggregates.partialScan(spec(false), description);
        }
        if (limit != null) {
            description += " limit=" + limit;
        }
        return new KafkaLogScan(spec(true), schema, description);
    }
}
