package org.mtporacle.api;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The content digest of spec §6. The expected values were computed outside the code: the canonical bytes written out
 * by hand with {@code printf} and hashed with {@code sha256sum} (the same vectors are checked by the Python and the
 * TypeScript SDKs).
 */
class CheckpointDigestTest {
    /** keys F32 [1,1,1,2] = (1, −2); values BF16 [1,1,1,2] = (1, −2); hidden F16 [1,1,2] = (1, 0.5). */
    static final String VECTOR_P2 = "c5f4a7d7c91ce0454f4f99bb349e1fb84787fa3b59e3f8fd15f0c15a57fcb220";
    /** P = 1 (keys and values absent), the same hidden. */
    static final String VECTOR_P1 = "ca275b0589efc1c0911fb66fe4f5ea3e9c257947d7d4812d2491a9d6fa490269";

    private static HostTensor bytes(DType t, int[] shape, int... b) {
        byte[] raw = new byte[b.length];
        for (int i = 0; i < b.length; i++) {
            raw[i] = (byte) b[i];
        }
        return HostTensor.copyOf(t, shape, MemorySegment.ofArray(raw));
    }

    private static RowCheckpoint vector() {
        return new RowCheckpoint("qwen-mtp-v1", 2, 1, "abc",
                HostTensor.ofFloats(new float[] {1f, -2f}, 1, 1, 1, 2),
                bytes(DType.BF16, new int[] {1, 1, 1, 2}, 0x80, 0x3f, 0x00, 0xc0),
                hidden());
    }

    private static HostTensor hidden() {
        return bytes(DType.F16, new int[] {1, 1, 2}, 0x00, 0x3c, 0x00, 0x38);
    }

    @Test
    void theDigestIsTheSpecifiedEncodingByteForByte() {
        assertThat(vector().contentDigest()).isEqualTo(VECTOR_P2);
        assertThat(new RowCheckpoint("qwen-mtp-v1", 1, 0, "abc", null, null, hidden()).contentDigest())
                .isEqualTo(VECTOR_P1);
    }

    @Test
    void sealingRecordsItAndEveryChangeOfLabelOrContentBreaksIt() {
        RowCheckpoint cp = vector().sealed();
        assertThat(cp.digest()).isEqualTo(VECTOR_P2);
        assertThat(cp.digestMatches()).isTrue();
        assertThat(vector().digest()).isNull();
        assertThat(vector().digestMatches()).as("no digest never matches").isFalse();
        String d = cp.digest();
        RowCheckpoint[] changed = {
            new RowCheckpoint("qwen-mtp-v2", 2, 1, "abc", cp.keys(), cp.values(), cp.hidden(), d),
            new RowCheckpoint(cp.schema(), 3, 1, "abc", cp.keys(), cp.values(), cp.hidden(), d),
            new RowCheckpoint(cp.schema(), 2, 2, "abc", cp.keys(), cp.values(), cp.hidden(), d),
            new RowCheckpoint(cp.schema(), 2, 1, "abd", cp.keys(), cp.values(), cp.hidden(), d),
            // the same bytes read as another dtype, or in another shape
            new RowCheckpoint(cp.schema(), 2, 1, "abc", cp.keys(), cp.values(),
                    bytes(DType.BF16, new int[] {1, 1, 2}, 0x00, 0x3c, 0x00, 0x38), d),
            new RowCheckpoint(cp.schema(), 2, 1, "abc", cp.keys(), cp.values(), cp.hidden().reshape(1, 2, 1), d),
            // one bit of one tensor
            new RowCheckpoint(cp.schema(), 2, 1, "abc", cp.keys(), cp.values(),
                    bytes(DType.F16, new int[] {1, 1, 2}, 0x01, 0x3c, 0x00, 0x38), d),
            // keys and values swapped
            new RowCheckpoint(cp.schema(), 2, 1, "abc", cp.values(), cp.keys(), cp.hidden(), d),
        };
        for (RowCheckpoint c : changed) {
            assertThat(c.digestMatches()).as("%s", c).isFalse();
            assertThat(c.sealed().digestMatches()).as("resealed %s", c).isTrue();
        }
    }
}
