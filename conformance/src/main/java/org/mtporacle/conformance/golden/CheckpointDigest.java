package org.mtporacle.conformance.golden;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.RowCheckpoint;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The digest of a row checkpoint in golden traces: SHA-256 over the UTF-8 text
 * {@code "qwen-mtp-v1;P=<P>;draftOffset=<o>;"} followed by the tensors {@code keys}, {@code values} (absent when
 * {@code P == 1}) and {@code hidden}, each as little-endian F32 values in row-major order (converted to F32 first
 * when captured in another dtype). The model identity is not part of it: the trace names the model once.
 */
public final class CheckpointDigest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private CheckpointDigest() {
    }

    /** The digest of {@code cp}, lowercase hex. */
    public static String of(RowCheckpoint cp) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        md.update((cp.schema() + ";P=" + cp.processedTokens() + ";draftOffset=" + cp.draftOffset() + ";")
                .getBytes(StandardCharsets.UTF_8));
        update(md, cp.keys());
        update(md, cp.values());
        update(md, cp.hidden());
        return HexFormat.of().formatHex(md.digest());
    }

    private static void update(MessageDigest md, HostTensor t) {
        if (t == null) {
            return;
        }
        float[] v = t.toFloatArray();
        byte[] bytes = new byte[v.length * 4];
        java.lang.foreign.MemorySegment seg = java.lang.foreign.MemorySegment.ofArray(bytes);
        for (int i = 0; i < v.length; i++) {
            seg.setAtIndex(F32, i, v[i]);
        }
        md.update(bytes);
    }
}
