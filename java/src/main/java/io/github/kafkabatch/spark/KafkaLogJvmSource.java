package io.github.kafkabatch.spark;

/**
 * {@link KafkaLogSource} under the name {@code kafka-log-jvm}: for code that must name this source
 * whatever else a session registers as {@code kafka-log}.
 *
 * <pre>{@code spark.read.format("kafka-log-jvm").load("/var/lib/kafka/data")}</pre>
 */
public final class KafkaLogJvmSource extends KafkaLogSource {
    /** The short name of {@code format(...)} and {@code USING}. */
    public static final String ALIAS = "kafka-log-jvm";

    /** A source; Spark makes one per lookup. */
    public KafkaLogJvmSource() {}

    @Override
    public String shortName() {
        return ALIAS;
    }
}
