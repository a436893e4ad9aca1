package io.github.kafkabatch.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's pushed aggregation as the core's header aggregates ({@code COUNT(*)}, {@code COUNT} of a column
 * that is never null, {@code MIN}/{@code MAX} of {@code offset} and {@code timestamp}; grouped by nothing,
 * by {@code topic}, or by {@code topic} and {@code partition}), answered on the driver from batch headers
 * (legacy message sets from their files' tallies, which the core reads once per process and remembers while
 * the files are unchanged). The rows are a {@link LocalScan}: Spark runs no task for them. Where that doesn't
 * answer all of it (a bound inside a batch, more legacy segments not remembered yet than the core reads on
 * the driver, ...), Spark pushes it partially: tasks aggregate their splits ({@link PartialAggregates}).
 */
final class HeaderAggregates {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Columns the core always fills: {@code COUNT(column)} of one is {@code COUNT(*)}. */
    private static final List<String> NEVER_NULL = List.of("topic", "partition", "offset", "timestamp", "timestampType");

    /** The group-by columns, in Spark's order, and the core's aggregate names, in Spark's order. */
    private final List<String> groupBy;

    private final List<String> names;
    private final List<DataType> types;
    private List<InternalRow> rows;
    /** Why the headers can't answer it all (the core's words), once asked. */
    private String why;
    /** The core refuses any push, even a partial one (every row must be read whole). */
    private boolean declined;

    private HeaderAggregates(List<String> groupBy, List<String> names, List<DataType> types) {
        this.groupBy = List.copyOf(groupBy);
        this.names = names;
        this.types = types;
    }

    private static String column(Expression e) {
        if (e instanceof NamedReference ref && ref.fieldNames().length == 1) {
            return ref.fieldNames()[0];
        }
        return null;
    }

    /** The aggregation in the core's terms, or null when it asks for anything the headers never answer. */
    static HeaderAggregates of(Aggregation aggregation) {
        List<String> groupBy = new ArrayList<>();
        for (Expression e : aggregation.groupByExpressions()) {
            String name = column(e);
            if (!"topic".equals(name) && !"partition".equals(name) || groupBy.contains(name)) {
                return null;
            }
            groupBy.add(name);
        }
        if (groupBy.equals(List.of("partition"))) {
            return null; // partitions of several topics in one group: not a grouping of the core's
        }
        List<String> names = new ArrayList<>();
        List<DataType> types = new ArrayList<>();
        for (AggregateFunc f : aggregation.aggregateExpressions()) {
            String name;
            if (f instanceof CountStar) {
                name = "count";
            } else if (f instanceof Count c && !c.isDistinct() && NEVER_NULL.contains(column(c.column()))) {
                name = "count";
            } else if (f instanceof Min m && ("offset".equals(column(m.column())) || "timestamp".equals(column(m.column())))) {
                name = "min_" + column(m.column());
            } else if (f instanceof Max m && ("offset".equals(column(m.column())) || "timestamp".equals(column(m.column())))) {
                name = "max_" + column(m.column());
            } else {
                return null;
            }
            names.add(name);
            types.add(name.endsWith("timestamp") ? DataTypes.TimestampType : DataTypes.LongType);
        }
        return new HeaderAggregates(groupBy, names, types);
    }

    /** Whether the core refuses any push of this aggregation, even a partial one. */
    boolean declined() {
        return declined;
    }

    boolean sameQuestion(HeaderAggregates other) {
        return groupBy.equals(other.groupBy) && names.equals(other.names);
    }

    /** Asks the core; true when the headers answer exactly (the rows are then kept, else the core's reason). */
    boolean answer(String spec) {
        JsonNode answer = json(Native.headerAggregates(spec, String.join(",", names), grouping()));
        if (!answer.has("rows")) {
            why = answer.path("why").asText();
            declined = answer.path("decline").asBoolean(false);
            return false;
        }
        rows = rowsOf(answer, groupBy, names.size());
        return true;
    }

    /** The core's name of the grouping: {@code all}, {@code topic} or {@code partition} (topic and partition). */
    String grouping() {
        return groupBy.isEmpty() ? "all" : groupBy.size() == 1 ? "topic" : "partition";
    }

    static JsonNode json(String text) {
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the core answers JSON", e);
        }
    }

    /**
     * The core's rows ({@code {"rows": [[topic, partition, [values]], ...]}}) as Spark's: the {@code groupBy}
     * columns, then the {@code aggregates} values.
     */
    static List<InternalRow> rowsOf(JsonNode answer, List<String> groupBy, int aggregates) {
        List<InternalRow> out = new ArrayList<>();
        for (JsonNode group : answer.get("rows")) {
            Object[] values = new Object[groupBy.size() + aggregates];
            for (int i = 0; i < groupBy.size(); i++) {
                values[i] = "topic".equals(groupBy.get(i))
                        ? UTF8String.fromString(group.get(0).asText())
                        : (Object) group.get(1).asInt();
            }
            JsonNode found = group.get(2);
            for (int i = 0; i < aggregates; i++) {
                JsonNode v = found.get(i);
                values[groupBy.size() + i] = v.isNull() ? null : (Object) v.asLong();
            }
            out.add(new GenericInternalRow(values));
        }
        return out;
    }

    /**
     * The schema of the rows: the group-by columns in Spark's order, then the aggregates in Spark's order (what
     * Spark's V2ScanRelationPushDown takes as the scan's output, complete or partial).
     */
    StructType schema() {
        List<StructField> fields = new ArrayList<>();
        for (String g : groupBy) {
            fields.add(DataTypes.createStructField(
                    g, "topic".equals(g) ? DataTypes.StringType : DataTypes.IntegerType, true));
        }
        for (int i = 0; i < names.size(); i++) {
            fields.add(DataTypes.createStructField(names.get(i), types.get(i), true));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /**
     * The aggregation, partially: each task's partial rows of its splits (from batch headers where they answer,
     * else from the records, which the core counts without building their values), which Spark's final
     * aggregation adds up. {@code spec} is the read without columns, as {@link #answer} had it.
     */
    PartialAggregates partialScan(String spec, String description) {
        String text = description + " aggregates=" + names + " groupBy=" + groupBy
                + " (partial, in tasks: " + why + ")";
        return new PartialAggregates(spec, schema(), text, String.join(",", names), grouping(), groupBy);
    }

    /** The answered rows as a scan whose rows Spark takes as they are. */
    LocalScan scan(String description) {
        StructType schema = schema();
        InternalRow[] answered = rows.toArray(new InternalRow[0]);
        String text = description + " aggregates=" + names + " groupBy=" + groupBy + " (from batch headers)";
        return new LocalScan() {
            @Override
            public InternalRow[] rows() {
                return answered;
            }

            @Override
            public StructType readSchema() {
                return schema;
            }

            @Override
            public String description() {
                return text;
            }
        };
    }
}
