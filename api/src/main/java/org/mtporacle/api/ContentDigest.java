package org.mtporacle.api;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The canonical encoding behind a checkpoint's content digest (spec §6, "Content digest"), shared by the drafter's and
 * the target's checkpoints: SHA-256 over ASCII magic bytes, then fields in order, all integers little-endian. A string
 * is its UTF-8 byte count as 4 bytes and those bytes; an integer 8 bytes two's complement; a tensor one byte 0 when
 * absent, or 1 followed by its dtype's safetensors name, its rank as 4 bytes, each dimension as 8 bytes, the byte
 * count as 8 bytes and its little-endian row-major bytes.
 */
final class ContentDigest {
    private static final int CHUNK = 1 << 16;
    private final MessageDigest md;

    ContentDigest(String magic) {
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JDK", e);
        }
        md.update(magic.getBytes(StandardCharsets.US_ASCII));
    }

    ContentDigest text(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        md.update(le(4).putInt(b.length).array());
        md.update(b);
        return this;
    }

    ContentDigest integer(long v) {
        md.update(le(8).putLong(v).array());
        return this;
    }

    ContentDigest tensor(HostTensor t) {
        if (t == null) {
            md.update((byte) 0);
            return this;
        }
        md.update((byte) 1);
        text(t.dtype().safetensorsName());
        int[] shape = t.shape();
        md.update(le(4).putInt(shape.length).array());
        for (int d : shape) {
            md.update(le(8).putLong(d).array());
        }
        MemorySegment data = t.data();
        long n = data.byteSize();
        md.update(le(8).putLong(n).array());
        byte[] chunk = new byte[(int) Math.min(CHUNK, n)];
        for (long off = 0; off < n; off += chunk.length) {
            int len = (int) Math.min(chunk.length, n - off);
            MemorySegment.copy(data, ValueLayout.JAVA_BYTE, off, chunk, 0, len);
            md.update(chunk, 0, len);
        }
        return this;
    }

    /** The digest as 64 lowercase hex digits. */
    String hex() {
        return HexFormat.of().formatHex(md.digest());
    }

    private static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }
}
