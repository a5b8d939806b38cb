package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/**
 * MLX affine-quantized rows (spec §2), {@code w = scale·q + bias} per group: {@code Affine(bits, groupSize)} of
 * {@link WeightFormat}. Codes are read exactly as {@link WeightRows#decodeRange} defines them (a little-endian bit
 * stream of little-endian u32 words per row); tests hold every fast path to that definition.
 *
 * <p>2-, 4- and 8-bit codes: a chunk is {@code L} words ({@code C = L·c} elements, {@code c = 32/bits}); step
 * {@code s} of lane {@code j} is element {@code c·j + s}. Step {@code s < c−1} takes {@code word & (mask << bits·s)},
 * which is {@code q·2^(bits·s)} exactly as a float, against {@code x·2^(−bits·s)} prepared once per input (the same
 * product {@code q·x}, exact unless {@code x} is below ~2^−98); the last step takes {@code word >>> (32−bits)} against
 * {@code x}. 3-, 5- and 6-bit codes: a chunk is one group in natural order, codes by scalar bit extraction.
 *
 * <p>Order of one row: per chunk {@code t = fma(q_s, x_s, t)} over steps in order, then
 * {@code acc = fma(t, scale_lanes, acc)}, chunks in order; then per block of {@code L} vector groups
 * {@code acc = fma(bias_block, Σx_block, acc)}, blocks in order (groups past the vector region count as 0); the
 * driver adds {@link LaneSum} of {@code acc} and the scalar tail.
 */
record AffineFormat(LinearWeight.Affine w, int in, int words, int groups, int codesPerWord, int chunk,
        VectorShuffle<Float>[] scaleLanes) implements WeightFormat {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    AffineFormat(LinearWeight.Affine w) {
        this(w, w.inFeatures(), w.codes().dim(1), w.scales().dim(1), 32 % w.bits() == 0 ? 32 / w.bits() : 0,
                32 % w.bits() == 0 ? L * 32 / w.bits() : w.groupSize(), shuffles(w.bits(), w.groupSize()));
    }

    /** For chunk {@code k}, lane {@code j} takes group {@code (k·C + c·j)/g} of its block of {@code L} groups. */
    @SuppressWarnings("unchecked")
    private static VectorShuffle<Float>[] shuffles(int bits, int g) {
        if (32 % bits != 0) {
            return new VectorShuffle[0];
        }
        int c = 32 / bits;
        int per = g / c; // chunks per block of L groups: L·g / C
        VectorShuffle<Float>[] out = new VectorShuffle[per];
        for (int k = 0; k < per; k++) {
            final int kk = k;
            out[k] = VectorShuffle.fromOp(F, j -> ((kk * L * c + c * j) / g) % L);
        }
        return out;
    }

    /** Groups inside the vector region; their bias terms are added by {@link #dot}. */
    int vectorGroups() {
        return vectorEnd() / w.groupSize();
    }

    /** Vector groups rounded up to whole blocks of {@code L}. */
    private int paddedGroups() {
        return (vectorGroups() + L - 1) / L * L;
    }

    @Override
    public int preparedSize() {
        return in + paddedGroups();
    }

    @Override
    public int scratchSize() {
        return 2 * L + Math.max(chunk + groups, vectorEnd() / chunk * L) + paddedGroups();
    }

    /** Permuted, prescaled x of the vector region, the natural tail, then per-group {@code Σx} padded with 0. */
    @Override
    public void prepare(float[] dst, int dstOff, float[] x, int xOff) {
        int n = vectorEnd();
        int c = codesPerWord;
        if (c == 0) {
            System.arraycopy(x, xOff, dst, dstOff, n);
        }
        for (int k = 0; k < n && c != 0; k += chunk) {
            for (int s = 0; s < c; s++) {
                float scale = s == c - 1 ? 1f : Math.scalb(1f, -w.bits() * s);
                for (int j = 0; j < L; j++) {
                    dst[dstOff + k + s * L + j] = x[xOff + k + c * j + s] * scale;
                }
            }
        }
        System.arraycopy(x, xOff + n, dst, dstOff + n, in - n);
        int g = w.groupSize();
        for (int k = 0, vg = vectorGroups(); k < paddedGroups(); k++) {
            float s = 0f;
            for (int i = 0; i < g && k < vg; i++) {
                s += x[xOff + k * g + i];
            }
            dst[dstOff + in + k] = s;
        }
    }

    @Override
    public float dot(int row, float[] xp, int xpOff, float[] scratch) {
        return codesPerWord != 0 ? packed(row, xp, xpOff, scratch) : natural(row, xp, xpOff, scratch);
    }

    /**
     * 2-, 4-, 8-bit rows. {@code scratch}: {@code [0, L·chunks)} the chunks' lane scales, then {@code L·blocks} bias
     * lanes, then {@code L} temporaries. Vectors never cross a call, so nothing is boxed if a call is not inlined.
     */
    private float packed(int row, float[] xp, int xpOff, float[] scratch) {
        int chunks = vectorEnd() / chunk;
        int per = scaleLanes.length;
        int vg = vectorGroups();
        int biasOff = chunks * L;
        int tmp = biasOff + paddedGroups();
        long gBase = (long) row * groups;
        for (int k = 0; k < chunks; k += per) {
            int g0 = k / per * L;
            blockInto(scratch, tmp, w.scales(), gBase + g0, Math.min(L, vg - g0), scratch, tmp + L);
            FloatVector sb = FloatVector.fromArray(F, scratch, tmp);
            for (int q = 0; q < per && k + q < chunks; q++) {
                sb.rearrange(scaleLanes[q]).intoArray(scratch, (k + q) * L);
            }
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            blockInto(scratch, biasOff + g0, w.biases(), gBase + g0, Math.min(L, vg - g0), scratch, tmp + L);
        }
        int c = codesPerWord;
        int bits = w.bits();
        int top = 32 - bits;
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        FloatVector acc = FloatVector.zero(F);
        for (int k = 0; k < chunks; k++) {
            IntVector wv = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * k * L, ByteOrder.LITTLE_ENDIAN);
            int xb = xpOff + k * chunk;
            FloatVector t = FloatVector.zero(F);
            int mask = (1 << bits) - 1;
            for (int s = 0; s < c - 1; s++, mask <<= bits) {
                t = ((FloatVector) wv.and(mask).convert(VectorOperators.I2F, 0))
                        .fma(FloatVector.fromArray(F, xp, xb + s * L), t);
            }
            t = ((FloatVector) wv.lanewise(VectorOperators.LSHR, top).convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.fromArray(F, xp, xb + (c - 1) * L), t);
            acc = t.fma(FloatVector.fromArray(F, scratch, k * L), acc);
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            acc = FloatVector.fromArray(F, scratch, biasOff + g0).fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /** 3-, 5-, 6-bit rows: one group per chunk, codes by scalar extraction, the group's scale broadcast. */
    private float natural(int row, float[] xp, int xpOff, float[] scratch) {
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        int biasOff = L + chunk + groups;
        long gBase = (long) row * groups;
        WeightFormat.floats(scratch, L + chunk, w.scales(), gBase, groups);
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            blockInto(scratch, biasOff + g0, w.biases(), gBase + g0, Math.min(L, vg - g0), scratch, 0);
        }
        FloatVector acc = FloatVector.zero(F);
        for (int k = 0; k < chunks; k++) {
            codes(scratch, L, row, k * chunk, chunk);
            FloatVector t = FloatVector.zero(F);
            int xb = xpOff + k * chunk;
            for (int s = 0; s < chunk; s += L) {
                t = FloatVector.fromArray(F, scratch, L + s).fma(FloatVector.fromArray(F, xp, xb + s), t);
            }
            acc = t.fma(FloatVector.broadcast(F, scratch[L + chunk + k]), acc);
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            acc = FloatVector.fromArray(F, scratch, biasOff + g0).fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /**
     * {@code dst[off, off+L)} = {@code n ≤ L} f32 values of {@code t} from {@code index}, lanes past {@code n} zero;
     * {@code tmp[tmpOff, tmpOff+L)} is scratch.
     */
    private static void blockInto(float[] dst, int off, HostTensor t, long index, int n, float[] tmp, int tmpOff) {
        if (n == L && t.dtype() == DType.BF16) {
            WeightFormat.Bf16.load(t.data(), 2 * index).intoArray(dst, off);
        } else {
            java.util.Arrays.fill(tmp, tmpOff, tmpOff + L, 0f);
            WeightFormat.floats(tmp, tmpOff, t, index, n);
            System.arraycopy(tmp, tmpOff, dst, off, L);
        }
    }

    /** Codes {@code q[from, from+n)} of {@code row} as floats, by scalar bit extraction. */
    private void codes(float[] dst, int dstOff, int row, int from, int n) {
        MemorySegment d = w.codes().data();
        long base = (long) row * words;
        int bits = w.bits();
        long mask = (1L << bits) - 1;
        for (int i = 0; i < n; i++) {
            long bit = (long) (from + i) * bits;
            int word = (int) (bit >>> 5);
            int shift = (int) (bit & 31);
            long v = Integer.toUnsignedLong(d.getAtIndex(U32, base + word)) >>> shift;
            if (shift + bits > 32) {
                v |= Integer.toUnsignedLong(d.getAtIndex(U32, base + word + 1)) << (32 - shift);
            }
            dst[dstOff + i] = v & mask;
        }
    }

    /** Unsupported: affine rows are multiplied through {@link #dot} only (their bias term needs the group sums). */
    @Override
    public void decode(float[] dst, int dstOff, int row) {
        throw new UnsupportedOperationException("affine rows have no dense f32 panel; use dot");
    }
}
