package io.github.kafkabatch.spark;

import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** Spark's options handed to the core as they were given: a JSON object of strings (the core checks them). */
final class Options {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The option carrying the driver's resolved value specs to the executors (bindings/jni values.rs). */
    static final String RESOLVED_VALUES = "kafkabatch.resolvedValues";

    private Options() {}

    /** The options, with {@code resolvedValues} (the core's specs of the typed columns, or null) added. */
    static String toJson(CaseInsensitiveStringMap options, String resolvedValues) {
        Map<String, String> given = new TreeMap<>(options.asCaseSensitiveMap());
        given.keySet().removeIf(RESOLVED_VALUES::equalsIgnoreCase);
        if (resolvedValues != null) {
            given.put(RESOLVED_VALUES, resolvedValues);
        }
        try {
            return JSON.writeValueAsString(given);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a map of strings always serialises", e);
        }
    }
}
