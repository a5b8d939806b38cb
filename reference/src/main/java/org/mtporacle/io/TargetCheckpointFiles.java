package org.mtporacle.io;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.UntrustedText;

/**
 * The portable file form of a {@link TargetCheckpoint} (spec §13.3), as {@link CheckpointFiles} is the drafter's: a
 * safetensors file whose {@code __metadata__} holds {@code format} ({@value #FORMAT}), {@code schema}
 * ({@code qwen-target-v1}), {@code processedTokens}, {@code modelIdentity} and {@code digest}, and whose tensors are
 * {@code convWindows}, {@code recurrentStates}, {@code keys} and {@code values} (each absent when the target has no
 * layer that holds it). Reading checks the file's form only; whether the checkpoint fits a target, and its digest its
 * content, is checked when a group restores it.
 */
public final class TargetCheckpointFiles {
    /** {@code __metadata__ format} of target checkpoint files. */
    public static final String FORMAT = "mtp-oracle-target-checkpoint/1";
    /**
     * The largest file read: 4 GiB holds a 27B-shape row (144 MiB of recurrent states) with about 60,000 positions of
     * KV. The tensors are mapped, not read; a restore copies only what the target's shape allows.
     */
    public static final long MAX_BYTES = 1L << 32;
    private static final Set<String> TENSORS = Set.of("convWindows", "recurrentStates", "keys", "values");
    private static final java.util.regex.Pattern DIGEST = java.util.regex.Pattern.compile("[0-9a-f]{64}");

    private TargetCheckpointFiles() {
    }

    public static void write(TargetCheckpoint cp, Path file) {
        SafetensorsWriter w = new SafetensorsWriter()
                .metadata("format", FORMAT)
                .metadata("schema", cp.schema())
                .metadata("processedTokens", Integer.toString(cp.processedTokens()))
                .metadata("modelIdentity", cp.modelIdentity());
        if (cp.digest() != null) {
            w.metadata("digest", cp.digest());
        }
        add(w, "convWindows", cp.convWindows());
        add(w, "recurrentStates", cp.recurrentStates());
        add(w, "keys", cp.keys());
        add(w, "values", cp.values());
        w.write(file);
    }

    private static void add(SafetensorsWriter w, String name, HostTensor t) {
        if (t != null) {
            w.add(name, t);
        }
    }

    /** True when {@code file} is a safetensors file of this format (the other inspectors report anything else). */
    public static boolean isTargetCheckpoint(Path file) {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            return FORMAT.equals(f.metadata().get("format"));
        } catch (MtpException e) {
            return false;
        }
    }

    /**
     * Reads a target checkpoint file of at most {@link #MAX_BYTES}, checked before it is mapped; the tensors are views
     * of the read-only mapping.
     *
     * @throws MtpException MALFORMED_FILE naming the file and what is wrong
     */
    public static TargetCheckpoint read(Path file) {
        String where = "target checkpoint " + UntrustedText.path(file);
        SafetensorsFile f = CheckpointFiles.open(file, where, MAX_BYTES, FORMAT);
        Map<String, String> meta = f.metadata();
        for (String name : f.names()) {
            if (!TENSORS.contains(name)) {
                throw MtpException.malformedFile(where + ": unexpected tensor " + UntrustedText.quote(name)
                        + " (expected convWindows, recurrentStates, keys, values)");
            }
        }
        String digest = meta.get("digest");
        if (digest != null && !DIGEST.matcher(digest).matches()) {
            throw MtpException.malformedFile(where + ": metadata 'digest' is not 64 lowercase hex digits (spec §13.3)");
        }
        return new TargetCheckpoint(CheckpointFiles.text(meta, "schema", where),
                CheckpointFiles.integer(meta, "processedTokens", where), CheckpointFiles.text(meta, "modelIdentity", where),
                CheckpointFiles.view(f, "convWindows"), CheckpointFiles.view(f, "recurrentStates"),
                CheckpointFiles.view(f, "keys"), CheckpointFiles.view(f, "values"), digest);
    }
}
