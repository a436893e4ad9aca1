package io.github.kafkabatch.spark;

import java.util.ArrayDeque;
import java.util.Deque;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's V2 predicates marshalled for the core (bindings/jni {@code pushdown}): column, operator and
 * literals, {@code NOT} and {@code AND} kept as such, anything else named {@code other}. Nothing is
 * decided here: which predicates are pushed, and which exactly, is the core's decision.
 */
final class Predicates {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private Predicates() {}

    /** The operator of {@code literal op column} written {@code column op' literal}, or null. */
    private static String flipped(String op) {
        switch (op) {
            case "=":
            case "<=>":
            case "<>":
                return op;
            case "<":
                return ">";
            case "<=":
                return ">=";
            case ">":
                return "<";
            case ">=":
                return "<=";
            default:
                return null;
        }
    }

    private static String column(Expression e) {
        if (e instanceof NamedReference ref && ref.fieldNames().length == 1) {
            return ref.fieldNames()[0];
        }
        return null;
    }

    private static JsonNode literal(Expression e) {
        if (!(e instanceof Literal<?> lit)) {
            return null;
        }
        ObjectNode out = JSON.objectNode();
        Object v = lit.value();
        if (v == null) {
            out.put("null", true);
        } else if (lit.dataType().equals(DataTypes.TimestampType) && v instanceof Long us) {
            out.put("timestamp_us", us);
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            out.put("int", ((Number) v).longValue());
        } else if (v instanceof UTF8String s) {
            out.put("str", s.toString());
        } else if (v instanceof Boolean b) {
            out.put("bool", b);
        } else {
            out.put("other", true);
        }
        return out;
    }

    private static ObjectNode other(Predicate p) {
        ObjectNode out = JSON.objectNode();
        out.put("other", p.toString());
        return out;
    }

    /** One predicate that is not {@code AND} or {@code NOT}: a comparison, IN, IS (NOT) NULL, or other. */
    private static ObjectNode leaf(Predicate p) {
        Expression[] children = p.children();
        String op = p.name();
        ObjectNode out = JSON.objectNode();
        ArrayNode literals = out.putArray("literals");
        String name;
        switch (op) {
            case "IS_NULL":
            case "IS_NOT_NULL":
                name = children.length == 1 ? column(children[0]) : null;
                break;
            case "IN":
                name = children.length >= 1 ? column(children[0]) : null;
                for (int i = 1; name != null && i < children.length; i++) {
                    JsonNode lit = literal(children[i]);
                    if (lit == null) {
                        return other(p);
                    }
                    literals.add(lit);
                }
                break;
            default:
                if (children.length != 2) {
                    return other(p);
                }
                name = column(children[0]);
                JsonNode lit = literal(children[1]);
                if (name == null && flipped(op) != null) {
                    name = column(children[1]);
                    lit = literal(children[0]);
                    op = flipped(op);
                }
                if (lit == null) {
                    return other(p);
                }
                literals.add(lit);
        }
        if (name == null) {
            return other(p);
        }
        out.put("column", name);
        out.put("op", op);
        return out;
    }

    /** The predicate as the core's spec takes it (nested {@code AND}/{@code NOT} walked with a work list). */
    static JsonNode marshal(Predicate predicate) {
        ObjectNode root = JSON.objectNode();
        // (predicate, where its JSON goes): an array to add to, or an object's "not" field
        Deque<Object[]> todo = new ArrayDeque<>();
        ArrayNode holder = JSON.arrayNode();
        todo.push(new Object[] {predicate, holder});
        while (!todo.isEmpty()) {
            Object[] item = todo.pop();
            Predicate p = (Predicate) item[0];
            JsonNode node;
            if ("AND".equals(p.name()) || "NOT".equals(p.name())) {
                ObjectNode wrapper = JSON.objectNode();
                ArrayNode parts = JSON.arrayNode();
                for (Expression child : p.children()) {
                    if (child instanceof Predicate c) {
                        todo.push(new Object[] {c, parts});
                    } else {
                        parts.add(JSON.objectNode().put("other", child.toString()));
                    }
                }
                if ("AND".equals(p.name())) {
                    wrapper.set("and", parts);
                } else {
                    wrapper.set("not", parts);
                }
                node = wrapper;
            } else {
                node = leaf(p);
            }
            ((ArrayNode) item[1]).add(node);
        }
        root.setAll((ObjectNode) unwrapNot(holder.get(0)));
        return root;
    }

    /** {@code {"not": [p]}} (the work list's form) as {@code {"not": p}}, throughout. */
    private static JsonNode unwrapNot(JsonNode node) {
        Deque<JsonNode> todo = new ArrayDeque<>();
        todo.push(node);
        while (!todo.isEmpty()) {
            JsonNode n = todo.pop();
            if (n.has("not") && n.get("not").isArray()) {
                ArrayNode parts = (ArrayNode) n.get("not");
                JsonNode child = parts.size() == 1 ? parts.get(0) : JSON.objectNode().put("other", "NOT");
                ((ObjectNode) n).set("not", child);
                todo.push(child);
            } else if (n.has("and")) {
                n.get("and").forEach(todo::push);
            }
        }
        return node;
    }
}
