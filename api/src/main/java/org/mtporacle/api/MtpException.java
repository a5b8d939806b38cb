package org.mtporacle.api;

import java.util.Objects;

/**
 * The one exception type of the contract: every failure a backend, the model reader or the reference reports is an
 * {@code MtpException} of one of a closed set of {@link Kind kinds}. Messages follow the form
 * {@code operation: what is wrong, actual vs expected (spec §)}, on one line: control characters in a message (a
 * newline inside a file's string, a native library's text) are escaped by {@link UntrustedText#line}, so a message
 * cannot split into a fake second line.
 *
 * <p>Unless the kind is {@link Kind#BACKEND_FAILURE} on a group that says it is poisoned, a failed call leaves the
 * object it was called on unchanged (spec §11.1).
 */
public final class MtpException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What went wrong, as a closed set that conformance compares across backends. */
    public enum Kind {
        /** An argument is malformed: shape, dtype, range, length, NaN, duplicate index (spec §11.1). */
        INVALID_ARGUMENT,
        /** The call is not allowed in the object's current state: open round, no retained hidden, closed group. */
        ILLEGAL_STATE,
        /** A checkpoint has the wrong schema, alignment, shapes, dtypes or model identity (spec §6). */
        INCOMPATIBLE_CHECKPOINT,
        /** A model directory or config does not describe a supported Qwen3.5 MTP block (spec §1.3, §11.4, §12). */
        INCOMPATIBLE_MODEL,
        /** A file is malformed: truncated, bad header, overlapping tensors, bad JSON. */
        MALFORMED_FILE,
        /** A backend is not usable here (library missing, wrong version); the message says how to fix it. */
        UNAVAILABLE,
        /** The backend's own computation failed (a native error); the group may be poisoned. */
        BACKEND_FAILURE
    }

    private final Kind kind;

    public MtpException(Kind kind, String message) {
        super(UntrustedText.message(message));
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    public MtpException(Kind kind, String message, Throwable cause) {
        super(UntrustedText.message(message), cause);
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    public Kind kind() {
        return kind;
    }

    public static MtpException invalidArgument(String message) {
        return new MtpException(Kind.INVALID_ARGUMENT, message);
    }

    public static MtpException illegalState(String message) {
        return new MtpException(Kind.ILLEGAL_STATE, message);
    }

    public static MtpException incompatibleCheckpoint(String message) {
        return new MtpException(Kind.INCOMPATIBLE_CHECKPOINT, message);
    }

    public static MtpException incompatibleModel(String message) {
        return new MtpException(Kind.INCOMPATIBLE_MODEL, message);
    }

    public static MtpException malformedFile(String message) {
        return new MtpException(Kind.MALFORMED_FILE, message);
    }

    @Override
    public String toString() {
        return "MtpException[" + kind + "]: " + getMessage();
    }
}
