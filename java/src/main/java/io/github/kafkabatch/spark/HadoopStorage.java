package io.github.kafkabatch.spark;

import java.io.Closeable;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Hadoop's {@link FileSystem} as the native reader's storage of remote roots (the Rust side,
 * bindings/jni/src/hadoop.rs, calls these methods): listings with sizes, sizes, ranged reads. The
 * configuration is the one Spark's file sources read with, so {@code spark.hadoop.fs.s3a.*}, {@code
 * fs.gs.*}, {@code fs.azure.*} settings, credential providers and a read's {@code fs.*} options apply:
 * the session's {@code newHadoopConf()} plus those options, made on the driver and broadcast to executors
 * (as Parquet's reader factory does).
 *
 * <p>One instance per native reader (and per driver-side scan); its open streams are reused for the
 * ranged reads of the same file and closed by {@link #close}.
 */
final class HadoopStorage implements Closeable {
    /** Streams kept open for further ranged reads of the same files. */
    private static final int OPEN_STREAMS = 16;

    /** The largest piece copied at once where a stream can't read into a direct buffer. */
    private static final int COPY_CHUNK = 1 << 20;

    /** The storage of the reader being opened on this thread ({@link #opening}). */
    private static final ThreadLocal<HadoopStorage> OPENING = new ThreadLocal<>();

    private final Configuration conf;
    private final Map<String, String> schemes = new HashMap<>();
    private final LinkedHashMap<String, FSDataInputStream> open = new LinkedHashMap<>(OPEN_STREAMS, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, FSDataInputStream> eldest) {
            if (size() > OPEN_STREAMS) {
                closeQuietly(eldest.getValue());
                return true;
            }
            return false;
        }
    };

    HadoopStorage(Configuration conf) {
        this.conf = conf;
    }

    /**
     * The driver's Hadoop configuration of a read: the active session's (Spark's {@code
     * spark.hadoop.*} settings and the session's SQL conf) with the read's {@code fs.*} options set, as
     * Spark's file sources make it.
     */
    static Configuration sessionConf(String[] options) {
        SparkSession active = SparkSession.active();
        if (!(active instanceof org.apache.spark.sql.classic.SparkSession session)) {
            throw new IllegalStateException("reading through Hadoop's FileSystem needs a classic Spark session, not "
                    + active.getClass().getName());
        }
        Configuration conf = session.sessionState().newHadoopConf();
        for (int i = 0; i + 1 < options.length; i += 2) {
            conf.set(options[i], options[i + 1]);
        }
        return conf;
    }

    /** {@link #sessionConf} broadcast to executors, or null when the read needs no Hadoop storage. */
    static Broadcast<SerializableConfiguration> broadcastFor(String spec) {
        String[] options = Native.hadoopOptions(spec);
        if (options == null) {
            return null;
        }
        SparkSession active = SparkSession.active();
        return JavaSparkContext.fromSparkContext(active.sparkContext())
                .broadcast(new SerializableConfiguration(sessionConf(options)));
    }

    /**
     * Runs {@code open} (which opens a native reader) with a storage over {@code conf} (null: none) as
     * the one {@link #here} gives the reader.
     */
    static <T> T opening(Broadcast<SerializableConfiguration> conf, Supplier<T> open) {
        if (conf == null) {
            return open.get();
        }
        OPENING.set(new HadoopStorage(conf.value().value()));
        try {
            return open.get();
        } finally {
            OPENING.remove();
        }
    }

    /**
     * The storage of the native call running on this thread: in a task, the one {@link #opening} made
     * from the broadcast configuration; on the driver, one over the session's configuration with the
     * read's {@code fs.*} options (name, value pairs).
     */
    static HadoopStorage here(String[] options) {
        HadoopStorage opened = OPENING.get();
        if (opened != null) {
            return opened;
        }
        if (TaskContext.get() != null) {
            throw new IllegalStateException(
                    "a kafka-log task was opened without its scan's Hadoop configuration (a bug, please report it)");
        }
        return new HadoopStorage(sessionConf(options));
    }

    /** Null when Hadoop has a FileSystem for {@code scheme}; else why not, in words. */
    synchronized String whyNot(String scheme) {
        String why = schemes.computeIfAbsent(scheme, s -> {
            try {
                FileSystem.getFileSystemClass(s, conf);
                return "";
            } catch (IOException | RuntimeException | LinkageError e) {
                return e.getMessage() == null ? e.getClass().getName() : e.getMessage();
            }
        });
        return why.isEmpty() ? null : why;
    }

    private FileSystem fs(Path path) throws IOException {
        return path.getFileSystem(conf);
    }

    /**
     * The files under {@code prefix} (all levels if {@code recursive}) as {@code [String[] relative,
     * long[] sizes]}: each file's path after the folder's, so the caller spells it as the prefix was
     * spelled. A file itself lists nothing; a missing folder is {@link FileNotFoundException}.
     */
    synchronized Object[] list(String prefix, boolean recursive) throws IOException {
        Path root = new Path(prefix);
        FileSystem fs = fs(root);
        Path qualified = fs.makeQualified(root);
        String head = qualified.toUri().getPath();
        head = head.endsWith("/") ? head : head + "/";
        List<String> names = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        if (!fs.getFileStatus(qualified).isDirectory()) {
            return new Object[] {new String[0], new long[0]};
        }
        if (recursive) {
            RemoteIterator<LocatedFileStatus> files = fs.listFiles(qualified, true);
            while (files.hasNext()) {
                add(files.next(), head, names, sizes);
            }
        } else {
            for (FileStatus status : fs.listStatus(qualified)) {
                if (status.isFile()) {
                    add(status, head, names, sizes);
                }
            }
        }
        long[] lengths = new long[sizes.size()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = sizes.get(i);
        }
        return new Object[] {names.toArray(new String[0]), lengths};
    }

    private static void add(FileStatus status, String head, List<String> names, List<Long> sizes) throws IOException {
        URI uri = status.getPath().toUri();
        String path = uri.getPath();
        if (!path.startsWith(head)) {
            throw new IOException("the listing of " + head + " gave " + uri + ", which is not under it");
        }
        names.add(path.substring(head.length()));
        sizes.add(status.getLen());
    }

    /** The size of a file; -1 when nothing (or a folder) is there. */
    synchronized long size(String path) throws IOException {
        Path at = new Path(path);
        try {
            FileStatus status = fs(at).getFileStatus(at);
            return status.isFile() ? status.getLen() : -1;
        } catch (FileNotFoundException e) {
            return -1;
        }
    }

    /**
     * Reads {@code into.remaining()} bytes of a file from {@code position} into {@code into} (a direct
     * buffer over the native reader's memory): straight in where the stream reads into buffers, else a
     * piece at a time; {@link java.io.EOFException} when the file is shorter.
     */
    synchronized void read(String path, long position, ByteBuffer into) throws IOException {
        FSDataInputStream in = open.get(path);
        if (in == null) {
            Path at = new Path(path);
            in = fs(at).open(at);
            open.put(path, in);
        }
        if (in.hasCapability(StreamCapabilities.PREADBYTEBUFFER)) {
            in.readFully(position, into);
            return;
        }
        byte[] piece = new byte[Math.min(into.remaining(), COPY_CHUNK)];
        long at = position;
        while (into.hasRemaining()) {
            int n = Math.min(piece.length, into.remaining());
            in.readFully(at, piece, 0, n);
            into.put(piece, 0, n);
            at += n;
        }
    }

    /** Closes the streams kept open. */
    @Override
    public synchronized void close() {
        for (FSDataInputStream in : open.values()) {
            closeQuietly(in);
        }
        open.clear();
    }

    private static void closeQuietly(FSDataInputStream in) {
        try {
            in.close();
        } catch (IOException e) {
            // nothing was written: a failed close loses nothing
        }
    }
}
