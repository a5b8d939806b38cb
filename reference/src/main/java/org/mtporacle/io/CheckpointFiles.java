package org.mtporacle.io;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.UntrustedText;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * The portable file form of a {@link RowCheckpoint} (spec §6), so a checkpoint captured by one backend can be restored
 * by another: a safetensors file whose {@code __metadata__} holds {@code schema} ({@code qwen-mtp-v1}),
 * {@code processedTokens}, {@code draftOffset} and {@code modelIdentity}, and whose tensors are {@code keys} and
 * {@code values} {@code [1, nKV, P−1, D]} (absent when {@code P == 1}) and {@code hidden} {@code [1, 1, H]}, in the
 * dtype they were captured in. {@code digest} holds the checkpoint's content digest (spec §6); files written before
 * it have none, read as checkpoints without a digest, which restore refuses ({@code mtp checkpoint --seal} vouches
 * for such a file by recomputing it). Reading checks the file's form only; whether the checkpoint fits a model, and
 * its digest its content, is checked when a group restores it.
 */
public final class CheckpointFiles {
    /** {@code __metadata__ format} of checkpoint files. */
    public static final String FORMAT = "mtp-oracle-checkpoint/1";
    /** The largest checkpoint file read: 1 GiB holds 2^18 positions of a bf16 KV with nKV·D = 1024. */
    public static final long MAX_BYTES = 1L << 30;
    private static final Set<String> TENSORS = Set.of("keys", "values", "hidden");
    private static final java.util.regex.Pattern DIGEST = java.util.regex.Pattern.compile("[0-9a-f]{64}");

    private CheckpointFiles() {
    }

    public static void write(RowCheckpoint cp, Path file) {
        SafetensorsWriter w = new SafetensorsWriter()
                .metadata("format", FORMAT)
                .metadata("schema", cp.schema())
                .metadata("processedTokens", Integer.toString(cp.processedTokens()))
                .metadata("draftOffset", Integer.toString(cp.draftOffset()))
                .metadata("modelIdentity", cp.modelIdentity());
        if (cp.digest() != null) {
            w.metadata("digest", cp.digest());
        }
        if (cp.keys() != null) {
            w.add("keys", cp.keys());
        }
        if (cp.values() != null) {
            w.add("values", cp.values());
        }
        w.add("hidden", cp.hidden());
        w.write(file);
    }

    /**
     * Reads a checkpoint file of at most {@link #MAX_BYTES}, checked before it is mapped. The tensors are views of
     * the read-only mapping (released by the garbage collector), never heap copies: restoring copies what the model's
     * shape allows, after {@code RowContract.checkpoint} has checked it.
     *
     * @throws MtpException MALFORMED_FILE naming the file and what is wrong
     */
    public static RowCheckpoint read(Path file) {
        String where = "checkpoint " + UntrustedText.path(file);
        SafetensorsFile f = open(file, where, MAX_BYTES, FORMAT);
        Map<String, String> meta = f.metadata();
        for (String name : f.names()) {
            if (!TENSORS.contains(name)) {
                throw MtpException.malformedFile(where + ": unexpected tensor " + UntrustedText.quote(name)
                        + " (expected keys, values, hidden)");
            }
        }
        if (!f.contains("hidden")) {
            throw MtpException.malformedFile(where + ": no 'hidden' tensor");
        }
        String digest = meta.get("digest");
        if (digest != null && !DIGEST.matcher(digest).matches()) {
            throw MtpException.malformedFile(where + ": metadata 'digest' is not 64 lowercase hex digits (spec §6)");
        }
        return new RowCheckpoint(text(meta, "schema", where), integer(meta, "processedTokens", where),
                integer(meta, "draftOffset", where), text(meta, "modelIdentity", where),
                view(f, "keys"), view(f, "values"), f.tensor("hidden"), digest);
    }

    /**
     * Opens {@code file} (mapped) after checking that it is a regular file of at most {@code maxBytes}, and that its
     * metadata names {@code format}.
     */
    static SafetensorsFile open(Path file, String where, long maxBytes, String format) {
        try {
            java.nio.file.attribute.BasicFileAttributes a = java.nio.file.Files.readAttributes(file,
                    java.nio.file.attribute.BasicFileAttributes.class);
            if (!a.isRegularFile() || a.size() > maxBytes) {
                throw MtpException.malformedFile(where + ": " + (a.isRegularFile() ? a.size() + " bytes, more than the "
                        + maxBytes + " such a file may have" : "not a regular file"));
            }
        } catch (java.io.IOException e) {
            throw MtpException.malformedFile(where + ": cannot read (" + UntrustedText.clip(e.toString()) + ")");
        }
        SafetensorsFile f = SafetensorsFile.open(file, true);
        if (!format.equals(f.metadata().get("format"))) {
            throw MtpException.malformedFile(where + ": metadata format " + UntrustedText.quote(f.metadata()
                    .get("format")) + ", expected '" + format + "'");
        }
        return f;
    }

    static HostTensor view(SafetensorsFile f, String name) {
        return f.contains(name) ? f.tensor(name) : null;
    }

    static String text(Map<String, String> meta, String key, String where) {
        String v = meta.get(key);
        if (v == null) {
            throw MtpException.malformedFile(where + ": metadata has no '" + key + "'");
        }
        return v;
    }

    static int integer(Map<String, String> meta, String key, String where) {
        String v = text(meta, key, where);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw MtpException.malformedFile(where + ": metadata '" + key + "' = " + UntrustedText.quote(v)
                    + " is not an integer");
        }
    }
}
