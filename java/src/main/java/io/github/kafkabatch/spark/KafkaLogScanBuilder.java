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
 * (each task stops after that many rows) and aggregates the batch headers answer. Each builder is one
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
    private StructType schema = KafkaLogSource.SCHEMA;
    private final List<Predicate> pushed = new ArrayList<>();
    private final ArrayNode pushedJson = JSON.createArrayNode();
    private Integer limit;
    /** The last aggregation asked about and its answer (null: the headers can't answer it). */
    private HeaderAggregates answered;
    /** The aggregation Spark pushed, answered. */
    private HeaderAggregates aggregates;

    KafkaLogScanBuilder(String optionsJson) {
        this.optionsJson = optionsJson;
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
        for (StructField f : KafkaLogSource.SCHEMA.fields()) {
            if (names.contains(f.name())) {
                kept.add(f);
            }
        }
        schema = new StructType(kept.toArray(new StructField[0]));
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        ArrayNode marshalled = JSON.createArrayNode();
        for (Predicate p : predicates) {
            marshalled.add(Predicates.marshal(p));
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

    /** Whether the headers answer {@code aggregation}: asked here, once, and remembered for the build. */
    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        return answer(aggregation) != null;
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        aggregates = answer(aggregation);
        return aggregates != null;
    }

    private HeaderAggregates answer(Aggregation aggregation) {
        HeaderAggregates asked = HeaderAggregates.of(aggregation);
        if (asked == null) {
            return null;
        }
        if (answered != null && answered.sameQuestion(asked)) {
            return answered;
        }
        answered = asked.answer(spec(false)) ? asked : null;
        return answered;
    }

    @Override
    public Scan build() {
        String description = KafkaLogSource.SHORT_NAME + " " + optionsJson;
        if (!pushed.isEmpty()) {
            description += " pushed=" + pushed;
        }
        if (aggregates != null) {
            return aggregates.scan(description);
        }
        if (limit != null) {
            description += " limit=" + limit;
        }
        return new KafkaLogScan(spec(true), schema, description);
    }
}
