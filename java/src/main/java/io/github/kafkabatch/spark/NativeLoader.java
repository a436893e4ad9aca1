package io.github.kafkabatch.spark;

import java.io.IOException;
import java.io.InputStream;
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
 * (one folder per distinct library, so jars of different builds never share a file).
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
        byte[] bytes;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("kafkabatch: this jar has no native library for " + platform()
                        + " (" + resource + "); build one with `make jvm` or set -D" + PATH_PROPERTY + "=/path/to/" + name);
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedLinkError("kafkabatch: reading " + resource + " from the jar failed", e);
        }
        try {
            String digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
            Path dir = Paths.get(System.getProperty("java.io.tmpdir"), "kafkabatch-" + digest);
            Path target = dir.resolve(name);
            if (!Files.isRegularFile(target) || Files.size(target) != bytes.length) {
                Files.createDirectories(dir);
                // Written beside and renamed: a JVM loading it at the same time never sees half a file.
                Path part = Files.createTempFile(dir, name, ".part");
                Files.write(part, bytes);
                Files.move(part, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
            return target;
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new UncheckedLinkError("kafkabatch: extracting the native library to java.io.tmpdir failed", e);
        }
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
