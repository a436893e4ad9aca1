package io.github.kafkabatch.spark;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * Loads the JNI library ({@code kafkabatch_jni}) once per JVM: the file named by the system property
 * {@code kafkabatch.native.path} if set, else the copy packed in this jar under
 * {@code io/github/kafkabatch/native/<os>-<arch>/}, extracted to {@code java.io.tmpdir/kafkabatch-<sha256>/}
 * (one folder per distinct library, so jars of different builds never share a file). The SHA-256 comes from
 * the {@code <library>.sha256} the build packs beside it, so a session whose library was extracted before
 * loads it without reading it from the jar.
 */
final class NativeLoader {
    /** The system property naming a library file to load instead of the packed one. */
    static final String PATH_PROPERTY = "kafkabatch.native.path";

    private static boolean loaded;

    private NativeLoader() {}

    /** Loads the library if this JVM has not yet. */
    static synchronized void load() {
        if (loaded) {
            return;
        }
        String override = System.getProperty(PATH_PROPERTY);
        if (override != null && !override.isEmpty()) {
            System.load(Paths.get(override).toAbsolutePath().toString());
        } else {
            System.load(extract().toString());
        }
        loaded = true;
    }

    /** {@code <os>-<arch>} as scripts/build_jvm.sh names the folder: linux-x86_64, darwin-aarch64, ... */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osName = os.startsWith("mac") || os.startsWith("darwin") ? "darwin"
                : os.startsWith("windows") ? "windows" : os.replaceAll("[^a-z0-9]", "");
        String archName = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return osName + "-" + archName;
    }

    private static Path extract() {
        String name = System.mapLibraryName("kafkabatch_jni");
        String resource = "/io/github/kafkabatch/native/" + platform() + "/" + name;
        URL url = NativeLoader.class.getResource(resource);
        if (url == null) {
            throw new UnsatisfiedLinkError("kafkabatch: this jar has no native library for " + platform()
                    + " (" + resource + "); build one with `make jvm` or set -D" + PATH_PROPERTY + "=/path/to/" + name);
        }
        try {
            String digest = packedDigest(resource);
            if (digest != null) {
                // the build's digest: a library extracted before is loaded without reading it from the jar again
                Path target = Paths.get(System.getProperty("java.io.tmpdir"), "kafkabatch-" + digest, name);
                URLConnection entry = url.openConnection();
                entry.setUseCaches(false);
                long size = entry.getContentLengthLong();
                if (!Files.isRegularFile(target) || Files.size(target) != size) {
                    try (InputStream in = entry.getInputStream()) {
                        write(target, in.readAllBytes());
                    }
                }
                return target;
            }
            byte[] bytes;
            try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
                bytes = in.readAllBytes();
            }
            digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
            Path target = Paths.get(System.getProperty("java.io.tmpdir"), "kafkabatch-" + digest, name);
            if (!Files.isRegularFile(target) || Files.size(target) != bytes.length) {
                write(target, bytes);
            }
            return target;
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new UncheckedLinkError("kafkabatch: extracting the native library " + resource
                    + " to java.io.tmpdir failed", e);
        }
    }

    /**
     * The SHA-256 the build wrote beside the library ({@code <library>.sha256}: scripts/build_jvm.sh,
     * scripts/jar_add_native.py), or null (a jar without one: the library's bytes are hashed here, which in a
     * fresh JVM takes longer than the rest of loading).
     */
    private static String packedDigest(String resource) throws IOException {
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource + ".sha256")) {
            if (in == null) {
                return null;
            }
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
            String digest = text.split("\\s+", 2)[0].toLowerCase(Locale.ROOT);
            return digest.matches("[0-9a-f]{64}") ? digest : null;
        }
    }

    /** Writes the library beside its place and renames it: a JVM loading it at the same time never sees half a file. */
    private static void write(Path target, byte[] bytes) throws IOException {
        Files.createDirectories(target.getParent());
        Path part = Files.createTempFile(target.getParent(), target.getFileName().toString(), ".part");
        Files.write(part, bytes);
        Files.move(part, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** An {@link UnsatisfiedLinkError} with its cause. */
    static final class UncheckedLinkError extends UnsatisfiedLinkError {
        private static final long serialVersionUID = 1L;

        UncheckedLinkError(String message, Throwable cause) {
            super(message + ": " + cause);
            initCause(cause);
        }
    }
}
