package io.github.kafkabatch.spark;

import org.apache.arrow.vector.ValueVector;
import org.apache.spark.sql.vectorized.ArrowColumnVector;

/**
 * Spark's {@link ArrowColumnVector} over one batch's vector, which answers {@link #isNullAt} without reading
 * the validity bits when the vector has no null (most of the core's columns: topic, partition, offset,
 * timestamp, timestampType, and headers of records that have them): Arrow Java's checked {@code isNull} is a
 * good part of the time Spark's generated code spends on each row. The vector must not change while this
 * wraps it (each batch gets new wrappers).
 */
final class NullCountedVector extends ArrowColumnVector {
    private final boolean nulls;

    NullCountedVector(ValueVector vector) {
        super(vector);
        this.nulls = vector.getNullCount() > 0;
    }

    @Override
    public boolean hasNull() {
        return nulls;
    }

    @Override
    public boolean isNullAt(int rowId) {
        return nulls && super.isNullAt(rowId);
    }
}
