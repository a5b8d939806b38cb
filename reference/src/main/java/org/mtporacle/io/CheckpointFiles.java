package org.mtporacle.io;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * The portable file form of a {@link RowCheckpoint} (spec §6), so a checkpoint captured by one backend can be restored
 * by another: a safetensors file whose {@code __metadata__} holds {@code schema} ({@code qwen-mtp-v1}),
 * {@code processedTokens}, {@code draftOffset} and {@code modelIdentity}, and whose tensors are {@code keys} and
 * {@code values} {@code [1, nKV, P−1, D]} (absent when {@code P == 1}) and {@code hidden} {@code [1, 1, H]}, in the
 * dtype they were captured in. Reading checks the file's form only; whether the checkpoint fits a model is checked
 * when a group restores it.
 */
public final class CheckpointFiles {
    /** {@code __metadata__ format} of checkpoint files. */
    public static final String FORMAT = "mtp-oracle-checkpoint/1";
    private static final Set<String> TENSORS = Set.of("keys", "values", "hidden");

    private CheckpointFiles() {
    }

    public static void write(RowCheckpoint cp, Path file) {
        SafetensorsWriter w = new SafetensorsWriter()
                .metadata("format", FORMAT)
                .metadata("schema", cp.schema())
                .metadata("processedTokens", Integer.toString(cp.processedTokens()))
                .metadata("draftOffset", Integer.toString(cp.draftOffset()))
                .metadata("modelIdentity", cp.modelIdentity());
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
     * Reads a checkpoint file; the tensors are copied to the heap, so the file is closed when this returns.
     *
     * @throws MtpException MALFORMED_FILE naming the file and what is wrong
     */
    public static RowCheckpoint read(Path file) {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            String where = "checkpoint " + file;
            Map<String, String> meta = f.metadata();
            if (!FORMAT.equals(meta.get("format"))) {
                throw MtpException.malformedFile(where + ": metadata format '" + meta.get("format") + "', expected '"
                        + FORMAT + "'");
            }
            for (String name : f.names()) {
                if (!TENSORS.contains(name)) {
                    throw MtpException.malformedFile(where + ": unexpected tensor '" + name
                            + "' (expected keys, values, hidden)");
                }
            }
            if (!f.contains("hidden")) {
                throw MtpException.malformedFile(where + ": no 'hidden' tensor");
            }
            return new RowCheckpoint(text(meta, "schema", where), integer(meta, "processedTokens", where),
                    integer(meta, "draftOffset", where), text(meta, "modelIdentity", where),
                    copy(f, "keys"), copy(f, "values"), f.tensor("hidden").copy());
        }
    }

    private static HostTensor copy(SafetensorsFile f, String name) {
        return f.contains(name) ? f.tensor(name).copy() : null;
    }

    private static String text(Map<String, String> meta, String key, String where) {
        String v = meta.get(key);
        if (v == null) {
            throw MtpException.malformedFile(where + ": metadata has no '" + key + "'");
        }
        return v;
    }

    private static int integer(Map<String, String> meta, String key, String where) {
        String v = text(meta, key, where);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw MtpException.malformedFile(where + ": metadata '" + key + "' = '" + v + "' is not an integer");
        }
    }
}
