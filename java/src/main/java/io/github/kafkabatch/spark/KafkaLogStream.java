package io.github.kafkabatch.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;

/**
 * {@code spark.readStream.format("kafka-log-jvm")}: micro-batches over growing log folders. The
 * driver's state (each partition's listing and incremental walk of batch headers, the rate limits,
 * the data-loss checks) is the core's, the one the Python source uses; a micro-batch from {@code
 * start} to {@code end} reads offsets {@code [start, end)} with the batch read's readers, so a
 * micro-batch replayed after a restart reads the same records.
 */
final class KafkaLogStream implements MicroBatchStream, SupportsTriggerAvailableNow {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The read as the core takes it (bindings/jni pushdown): options, columns. */
    private final String spec;
    private final StructType schema;
    private final Long maxOffsets;
    private final Long maxBytes;
    private long handle;

    KafkaLogStream(String spec, StructType schema) {
        this.spec = spec;
        this.schema = schema;
        this.handle = Native.streamOpen(spec);
        long rows = Native.streamMaxOffsets(handle);
        long bytes = Native.streamMaxBytes(handle);
        this.maxOffsets = rows < 0 ? null : rows;
        this.maxBytes = bytes < 0 ? null : bytes;
    }

    private synchronized long handle() {
        if (handle == 0) {
            throw new IllegalStateException(KafkaLogSource.SHORT_NAME + " stream used after stop()");
        }
        return handle;
    }

    @Override
    public Offset initialOffset() {
        return new KafkaLogOffset(Native.streamInitialOffset(handle()));
    }

    @Override
    public Offset deserializeOffset(String json) {
        return new KafkaLogOffset(json);
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        List<ReadLimit> limits = new ArrayList<>();
        if (maxOffsets != null) {
            limits.add(ReadLimit.maxRows(maxOffsets));
        }
        if (maxBytes != null) {
            limits.add(ReadLimit.maxBytes(maxBytes));
        }
        if (limits.isEmpty()) {
            return ReadLimit.allAvailable();
        }
        return limits.size() == 1 ? limits.get(0) : ReadLimit.compositeLimit(limits.toArray(new ReadLimit[0]));
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException(
                "latestOffset(Offset, ReadLimit) should be called instead of this method");
    }

    @Override
    public Offset latestOffset(Offset start, ReadLimit limit) {
        long rows = -1;
        long bytes = -1;
        ReadLimit[] limits =
                limit instanceof CompositeReadLimit ? ((CompositeReadLimit) limit).getReadLimits() : new ReadLimit[] {limit};
        for (ReadLimit each : limits) {
            if (each instanceof ReadMaxRows) {
                rows = ((ReadMaxRows) each).maxRows();
            } else if (each instanceof ReadMaxBytes) {
                bytes = ((ReadMaxBytes) each).maxBytes();
            } else if (!(each instanceof ReadAllAvailable)) {
                // a limit this source has no words for: the options' own
                rows = maxOffsets == null ? -1 : maxOffsets;
                bytes = maxBytes == null ? -1 : maxBytes;
            }
        }
        String begin = start == null ? "{}" : start.json();
        return new KafkaLogOffset(Native.streamLatestOffset(handle(), begin, rows, bytes));
    }

    @Override
    public Offset reportLatestOffset() {
        String latest = Native.streamReportLatest(handle());
        return latest == null ? null : new KafkaLogOffset(latest);
    }

    @Override
    public void prepareForTriggerAvailableNow() {
        Native.streamPrepareAvailableNow(handle());
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        String begin = start == null ? "{}" : start.json();
        // minPartitions' default: Spark's default parallelism, as for a batch read
        byte[][][] tasks = Native.streamPlanTasks(
                handle(), begin, end.json(), SparkContext.getOrCreate().defaultParallelism());
        InputPartition[] planned = new InputPartition[tasks.length];
        for (int i = 0; i < tasks.length; i++) {
            planned[i] = new KafkaLogPartition(tasks[i]);
        }
        return planned;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new KafkaLogReaderFactory(readerSpec(spec), schema);
    }

    /** The spec of the readers: the options of a stream's start are the driver's business. */
    private static String readerSpec(String spec) {
        try {
            ObjectNode node = (ObjectNode) JSON.readTree(spec);
            ObjectNode options = (ObjectNode) node.get("options");
            List<String> starting = new ArrayList<>();
            options.fieldNames().forEachRemaining(name -> {
                String lower = name.toLowerCase(Locale.ROOT);
                if (lower.equals("startingoffsets") || lower.equals("startingtimestamp")) {
                    starting.add(name);
                }
            });
            options.remove(starting);
            // a micro-batch's reader: a segment deleted since planning is failOnDataLoss's business
            node.put("stream", true);
            return node.toString();
        } catch (JsonProcessingException | ClassCastException e) {
            throw new IllegalStateException("the spec is JSON written by KafkaLogScanBuilder", e);
        }
    }

    @Override
    public void commit(Offset end) {
        Native.streamCommit(handle(), end.json());
    }

    @Override
    public synchronized void stop() {
        if (handle != 0) {
            Native.streamClose(handle);
            handle = 0;
        }
    }

    @Override
    public String toString() {
        return KafkaLogSource.SHORT_NAME + " stream " + spec;
    }
}
