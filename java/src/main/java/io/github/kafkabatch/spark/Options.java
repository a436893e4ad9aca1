package io.github.kafkabatch.spark;

import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** Spark's options handed to the core as they were given: a JSON object of strings (the core checks them). */
final class Options {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Options() {}

    static String toJson(CaseInsensitiveStringMap options) {
        Map<String, String> given = new TreeMap<>(options.asCaseSensitiveMap());
        try {
            return JSON.writeValueAsString(given);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a map of strings always serialises", e);
        }
    }
}
