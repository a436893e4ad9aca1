package kbtest;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A read-only Hadoop FileSystem for tests (tests/test_jvm_hadoop.py): {@code kbtest://any/x/y} is the local
 * file {@code <fs.kbtest.root>/x/y}. It reads its settings from the Hadoop configuration it is given, as
 * S3A reads {@code fs.s3a.*}: {@code fs.kbtest.root} (required), {@code fs.kbtest.log} (a file where each
 * call is recorded: {@code open <uri>}, {@code list <uri>}) and {@code fs.kbtest.fail} (open() of a path
 * containing this text throws an IOException).
 */
public class KbTestFileSystem extends FileSystem {
    private URI uri;
    private String root;
    private String log;
    private String fail;
    private FileSystem local;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        super.initialize(name, conf);
        root = conf.get("fs.kbtest.root");
        if (root == null) {
            throw new IOException("kbtest: fs.kbtest.root is not set in the Hadoop configuration");
        }
        root = root.replaceAll("/+$", "");
        log = conf.get("fs.kbtest.log");
        fail = conf.get("fs.kbtest.fail");
        uri = URI.create("kbtest://" + (name.getAuthority() == null ? "" : name.getAuthority()));
        local = FileSystem.getLocal(conf).getRawFileSystem();
    }

    @Override
    public String getScheme() {
        return "kbtest";
    }

    @Override
    public URI getUri() {
        return uri;
    }

    private void record(String what, Path path) throws IOException {
        if (log != null) {
            Files.write(Paths.get(log), (what + " " + path + "\n").getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
    }

    private Path toLocal(Path path) {
        return new Path("file://" + root + makeQualified(path).toUri().getPath());
    }

    private FileStatus toKb(FileStatus status) {
        String path = status.getPath().toUri().getPath();
        if (!path.startsWith(root)) {
            throw new IllegalStateException(path + " is not under " + root);
        }
        Path kb = new Path(uri + path.substring(root.length()));
        return new FileStatus(status.getLen(), status.isDirectory(), 1, 1 << 20, status.getModificationTime(), kb);
    }

    @Override
    public FSDataInputStream open(Path path, int bufferSize) throws IOException {
        record("open", path);
        if (fail != null && path.toString().contains(fail)) {
            throw new IOException("kbtest refuses to open " + path + " (fs.kbtest.fail)");
        }
        return local.open(toLocal(path), bufferSize);
    }

    @Override
    public FileStatus[] listStatus(Path path) throws IOException {
        record("list", path);
        FileStatus[] found = local.listStatus(toLocal(path));
        FileStatus[] out = new FileStatus[found.length];
        for (int i = 0; i < found.length; i++) {
            out[i] = toKb(found[i]);
        }
        return out;
    }

    @Override
    public FileStatus getFileStatus(Path path) throws IOException {
        try {
            return toKb(local.getFileStatus(toLocal(path)));
        } catch (FileNotFoundException e) {
            throw new FileNotFoundException("kbtest: no such file " + path);
        }
    }

    @Override
    public Path getWorkingDirectory() {
        return new Path(uri + "/");
    }

    @Override
    public void setWorkingDirectory(Path dir) {}

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
            short replication, long blockSize, Progressable progress) throws IOException {
        throw new IOException("kbtest is read-only");
    }

    @Override
    public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) throws IOException {
        throw new IOException("kbtest is read-only");
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        throw new IOException("kbtest is read-only");
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        throw new IOException("kbtest is read-only");
    }

    @Override
    public boolean mkdirs(Path f, FsPermission permission) throws IOException {
        throw new IOException("kbtest is read-only");
    }
}
