package io.github.kafkabatch.spark;

/** A failure the Rust core reported while planning or reading (a damaged batch, a tiered-storage error, ...). */
public class KafkaBatchException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An exception with the core's message. */
    public KafkaBatchException(String message) {
        super(message);
    }

    /** An exception with the core's message and its cause. */
    public KafkaBatchException(String message, Throwable cause) {
        super(message, cause);
    }
}
