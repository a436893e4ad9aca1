package io.github.kafkabatch.spark;

import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A stream's offsets as Spark's Kafka source writes them: JSON {@code {"topic":{"0":123}}}, per
 * topic-partition the next offset to read (the core writes and reads the text, topics sorted and
 * partitions in numeric order, so equal offsets have equal JSON).
 */
final class KafkaLogOffset extends Offset {
    private final String json;

    KafkaLogOffset(String json) {
        this.json = json;
    }

    @Override
    public String json() {
        return json;
    }
}
