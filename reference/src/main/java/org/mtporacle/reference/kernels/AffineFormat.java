package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
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
 * {@code s} of lane {@code j} is element {@code c·j + s}. Step {@code s} takes the code at bit {@code bits·s} in place,
 * from the word's low half ({@code s < c/2}) or from {@code word >>> 16}, as {@code q·2^(bits·(s mod c/2))} (below
 * 2^16, so exact as a float), against {@code x·2^(−bits·(s mod c/2))} prepared once per input: the same product
 * {@code q·x}, exact unless {@code x} is below ~2^−112. 3-, 5- and 6-bit codes: a chunk is one group in natural
 * order, codes by scalar bit extraction.
 *
 * <p>Order of one row: per chunk {@code t = fma(q_s, x_s, t)} over steps in order, then
 * {@code acc = fma(t, scale_lanes, acc)}, chunks in order; then per block of {@code L} vector groups
 * {@code acc = fma(bias_block, Σx_block, acc)}, blocks in order (groups past the vector region count as 0); the
 * driver adds {@link LaneSum} of {@code acc} and the scalar tail.
 */
record AffineFormat(LinearWeight.Affine w, int in, int words, int groups, int codesPerWord, int chunk,
        VectorShuffle<Float>[] scaleLanes, VectorShuffle<Float> dup, VectorShuffle<Float> slide)
        implements WeightFormat {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    AffineFormat(LinearWeight.Affine w) {
        this(w, w.inFeatures(), w.codes().dim(1), w.scales().dim(1), 32 % w.bits() == 0 ? 32 / w.bits() : 0,
                32 % w.bits() == 0 ? L * 32 / w.bits() : w.groupSize(), shuffles(w.bits(), w.groupSize()),
                dup(w.bits(), w.groupSize()), slide(w.bits(), w.groupSize()));
    }

    /**
     * When a chunk holds whole groups ({@code G = C/g} of them): lane {@code j} of a chunk takes relative group
     * {@code c·j/g}, read from the first {@code G} lanes of its block's scales slid by {@link #slide}; else null.
     */
    private static VectorShuffle<Float> dup(int bits, int g) {
        int c = 32 % bits == 0 ? 32 / bits : 0;
        return c == 0 || L * c % g != 0 ? null : VectorShuffle.fromOp(F, j -> c * j / g);
    }

    /** Lane {@code j} ← lane {@code j + G}: the next chunk's groups to the front (see {@link #dup}). */
    private static VectorShuffle<Float> slide(int bits, int g) {
        int c = 32 % bits == 0 ? 32 / bits : 0;
        return c == 0 || L * c % g != 0 ? null : VectorShuffle.fromOp(F, j -> (j + L * c / g) % L);
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
        return L + (codesPerWord != 0 ? 0 : chunk + groups); // a partial block; natural rows add codes and scales
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
                float scale = Math.scalb(1f, -w.bits() * (s % (c / 2)));
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
     * 2-, 4-, 8-bit rows. A word's low and high halves are taken apart once ({@code hi = word >>> 16}); step
     * {@code s < c/2} masks {@code lo}, step {@code c/2 + s} masks {@code hi}, each with {@code mask << bits·s}, so a
     * code is {@code q·2^(bits·s) < 2^16} and becomes a float exactly as {@code float(v | 0x4B000000) − 2^23} (an
     * integer op and a subtraction, cheaper than a conversion). The scale lanes of a chunk are a permutation of its
     * block's widened scales: when chunks hold whole groups, one fixed permutation of the block slid forward by a
     * chunk's groups each time ({@link #dup}, {@link #slide}; loop-invariant shuffles), else one per chunk.
     * {@code scratch} holds a partial block. One method per width, each with constant step counts and masks: the
     * compiler then unrolls the steps and keeps every mask in a register (a shared method with a variable step count
     * ran 1.3–1.5× slower).
     */
    private float packed(int row, float[] xp, int xpOff, float[] scratch) {
        return switch (w.bits()) {
            case 4 -> packed4(row, xp, xpOff, scratch);
            case 8 -> packed8(row, xp, xpOff, scratch);
            default -> packed2(row, xp, xpOff, scratch);
        };
    }

    /**
     * {@link #packed} for 4 bits (the common MLX width): four steps per half word.
     */
    private float packed4(int row, float[] xp, int xpOff, float[] scratch) {
        int per = scaleLanes.length;
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        long gBase = (long) row * groups;
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        FloatVector zero = FloatVector.zero(F);
        FloatVector acc = zero;
        for (int k0 = 0, g0 = 0; k0 < chunks; k0 += per, g0 += L) {
            FloatVector sb = block(w.scales(), gBase + g0, Math.min(L, vg - g0), scratch);
            for (int q = 0, kEnd = Math.min(per, chunks - k0); q < kEnd; q++) {
                IntVector lo = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * (k0 + q) * L,
                        ByteOrder.LITTLE_ENDIAN);
                IntVector hi = lo.lanewise(VectorOperators.LSHR, 16);
                int xb = xpOff + (k0 + q) * chunk;
                FloatVector t = zero;
                for (int s = 0; s < 4; s++) {
                    t = exact(lo.and(0xF << 4 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + s * L), t);
                }
                for (int s = 0; s < 4; s++) {
                    t = exact(hi.and(0xF << 4 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + (4 + s) * L), t);
                }
                if (dup != null) {
                    acc = t.fma(sb.rearrange(dup), acc);
                    sb = sb.rearrange(slide);
                } else {
                    acc = t.fma(sb.rearrange(scaleLanes[q]), acc);
                }
            }
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            acc = block(w.biases(), gBase + g0, Math.min(L, vg - g0), scratch)
                    .fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /**
     * {@link #packed4} for 8 bits: two steps per half word.
     */
    private float packed8(int row, float[] xp, int xpOff, float[] scratch) {
        int per = scaleLanes.length;
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        long gBase = (long) row * groups;
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        FloatVector zero = FloatVector.zero(F);
        FloatVector acc = zero;
        for (int k0 = 0, g0 = 0; k0 < chunks; k0 += per, g0 += L) {
            FloatVector sb = block(w.scales(), gBase + g0, Math.min(L, vg - g0), scratch);
            for (int q = 0, kEnd = Math.min(per, chunks - k0); q < kEnd; q++) {
                IntVector lo = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * (k0 + q) * L,
                        ByteOrder.LITTLE_ENDIAN);
                IntVector hi = lo.lanewise(VectorOperators.LSHR, 16);
                int xb = xpOff + (k0 + q) * chunk;
                FloatVector t = zero;
                for (int s = 0; s < 2; s++) {
                    t = exact(lo.and(0xFF << 8 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + s * L), t);
                }
                for (int s = 0; s < 2; s++) {
                    t = exact(hi.and(0xFF << 8 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + (2 + s) * L), t);
                }
                if (dup != null) {
                    acc = t.fma(sb.rearrange(dup), acc);
                    sb = sb.rearrange(slide);
                } else {
                    acc = t.fma(sb.rearrange(scaleLanes[q]), acc);
                }
            }
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            acc = block(w.biases(), gBase + g0, Math.min(L, vg - g0), scratch)
                    .fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /**
     * {@link #packed4} for 2 bits: eight steps per half word.
     */
    private float packed2(int row, float[] xp, int xpOff, float[] scratch) {
        int per = scaleLanes.length;
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        long gBase = (long) row * groups;
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        FloatVector zero = FloatVector.zero(F);
        FloatVector acc = zero;
        for (int k0 = 0, g0 = 0; k0 < chunks; k0 += per, g0 += L) {
            FloatVector sb = block(w.scales(), gBase + g0, Math.min(L, vg - g0), scratch);
            for (int q = 0, kEnd = Math.min(per, chunks - k0); q < kEnd; q++) {
                IntVector lo = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * (k0 + q) * L,
                        ByteOrder.LITTLE_ENDIAN);
                IntVector hi = lo.lanewise(VectorOperators.LSHR, 16);
                int xb = xpOff + (k0 + q) * chunk;
                FloatVector t = zero;
                for (int s = 0; s < 8; s++) {
                    t = exact(lo.and(0x3 << 2 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + s * L), t);
                }
                for (int s = 0; s < 8; s++) {
                    t = exact(hi.and(0x3 << 2 * s))
                            .fma(FloatVector.fromArray(F, xp, xb + (8 + s) * L), t);
                }
                if (dup != null) {
                    acc = t.fma(sb.rearrange(dup), acc);
                    sb = sb.rearrange(slide);
                } else {
                    acc = t.fma(sb.rearrange(scaleLanes[q]), acc);
                }
            }
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            acc = block(w.biases(), gBase + g0, Math.min(L, vg - g0), scratch)
                    .fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /** Whether {@link #dot4} applies: 4-bit codes whose chunks hold whole groups. */
    boolean hasDot4() {
        return w.bits() == 4 && dup != null;
    }

    /**
     * {@link #dot} of one 4-bit weight row against 4 prepared input rows ({@code xp} at {@code xpOff + r·stride}),
     * into {@code res[0, 4)}: each chunk's codes are unpacked once and multiplied into all 4 rows, each row with
     * exactly {@link #packed4}'s operations in its order, so the results equal 4 separate {@link #dot} calls bit for
     * bit. Requires {@link #hasDot4}.
     */
    void dot4(int row, float[] xp, int xpOff, int stride, float[] scratch, float[] res) {
        int per = scaleLanes.length;
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        long gBase = (long) row * groups;
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        int x1 = xpOff + stride;
        int x2 = x1 + stride;
        int x3 = x2 + stride;
        FloatVector zero = FloatVector.zero(F);
        FloatVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        for (int k0 = 0, g0 = 0; k0 < chunks; k0 += per, g0 += L) {
            FloatVector sb = block(w.scales(), gBase + g0, Math.min(L, vg - g0), scratch);
            for (int q = 0, kEnd = Math.min(per, chunks - k0); q < kEnd; q++) {
                IntVector lo = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * (k0 + q) * L,
                        ByteOrder.LITTLE_ENDIAN);
                IntVector hi = lo.lanewise(VectorOperators.LSHR, 16);
                int xb = (k0 + q) * chunk;
                FloatVector t0 = zero, t1 = zero, t2 = zero, t3 = zero;
                for (int s = 0; s < 8; s++) {
                    FloatVector v = exact((s < 4 ? lo : hi).and(0xF << 4 * (s & 3)));
                    int i = xb + s * L;
                    t0 = v.fma(FloatVector.fromArray(F, xp, xpOff + i), t0);
                    t1 = v.fma(FloatVector.fromArray(F, xp, x1 + i), t1);
                    t2 = v.fma(FloatVector.fromArray(F, xp, x2 + i), t2);
                    t3 = v.fma(FloatVector.fromArray(F, xp, x3 + i), t3);
                }
                FloatVector sc = sb.rearrange(dup);
                sb = sb.rearrange(slide);
                a0 = t0.fma(sc, a0);
                a1 = t1.fma(sc, a1);
                a2 = t2.fma(sc, a2);
                a3 = t3.fma(sc, a3);
            }
        }
        for (int g0 = 0; w.biases() != null && g0 < vg; g0 += L) {
            FloatVector b = block(w.biases(), gBase + g0, Math.min(L, vg - g0), scratch);
            int i = in + g0;
            a0 = b.fma(FloatVector.fromArray(F, xp, xpOff + i), a0);
            a1 = b.fma(FloatVector.fromArray(F, xp, x1 + i), a1);
            a2 = b.fma(FloatVector.fromArray(F, xp, x2 + i), a2);
            a3 = b.fma(FloatVector.fromArray(F, xp, x3 + i), a3);
        }
        res[0] = LaneSum.sum(a0);
        res[1] = LaneSum.sum(a1);
        res[2] = LaneSum.sum(a2);
        res[3] = LaneSum.sum(a3);
    }

    /** {@code v} (every lane below 2^23) as floats, exactly. */
    private static FloatVector exact(IntVector v) {
        return v.or(0x4B000000).reinterpretAsFloats().sub(0x1p23f);
    }

    /** {@code n ≤ L} f32 values of {@code t} from {@code index}, lanes past {@code n} zero ({@code tmp}: L floats). */
    private static FloatVector block(HostTensor t, long index, int n, float[] tmp) {
        if (n == L) {
            switch (t.dtype()) {
                case BF16 -> {
                    return WeightFormat.Bf16.load(t.data(), 2 * index);
                }
                case F16 -> {
                    return WeightFormat.F16.load(t.data(), 2 * index);
                }
                case F32 -> {
                    return FloatVector.fromMemorySegment(F, t.data(), 4 * index, ByteOrder.LITTLE_ENDIAN);
                }
                default -> {
                }
            }
        } else if (t.dtype() == DType.BF16) { // a partial block (a row whose group count is not a multiple of L)
            return ((IntVector) ShortVector.fromMemorySegment(WeightFormat.S, t.data(), 2 * index,
                    ByteOrder.LITTLE_ENDIAN, WeightFormat.S.indexInRange(0, n)).convertShape(VectorOperators.S2I,
                    WeightFormat.I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
        } else if (t.dtype() == DType.F32) {
            return FloatVector.fromMemorySegment(F, t.data(), 4 * index, ByteOrder.LITTLE_ENDIAN, F.indexInRange(0, n));
        }
        java.util.Arrays.fill(tmp, 0, L, 0f);
        WeightFormat.floats(tmp, 0, t, index, n);
        return FloatVector.fromArray(F, tmp, 0);
    }

    /** 3-, 5-, 6-bit rows: one group per chunk, codes by scalar extraction, the group's scale broadcast. */
    private float natural(int row, float[] xp, int xpOff, float[] scratch) {
        int chunks = vectorEnd() / chunk;
        int vg = vectorGroups();
        long gBase = (long) row * groups;
        WeightFormat.floats(scratch, L + chunk, w.scales(), gBase, groups);
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
            acc = block(w.biases(), gBase + g0, Math.min(L, vg - g0), scratch)
                    .fma(FloatVector.fromArray(F, xp, xpOff + in + g0), acc);
        }
        return LaneSum.sum(acc);
    }

    /**
     * Codes {@code q[from, from+n)} of {@code row} as floats. {@code from} is a group start, and a group of 32, 64 or
     * 128 codes fills whole words at any width, so the codes are read as one little-endian bit stream: a 64-bit buffer
     * refilled a word at a time.
     */
    private void codes(float[] dst, int dstOff, int row, int from, int n) {
        MemorySegment d = w.codes().data();
        int bits = w.bits();
        long wi = (long) row * words + (long) from * bits / 32;
        long mask = (1L << bits) - 1;
        long buf = 0;
        int have = 0;
        for (int i = 0; i < n; i++) {
            if (have < bits) {
                buf |= Integer.toUnsignedLong(d.getAtIndex(U32, wi++)) << have;
                have += 32;
            }
            dst[dstOff + i] = buf & mask;
            buf >>>= bits;
            have -= bits;
        }
    }

    /** Unsupported: affine rows are multiplied through {@link #dot} only (their bias term needs the group sums). */
    @Override
    public void decode(float[] dst, int dstOff, int row) {
        throw new UnsupportedOperationException("affine rows have no dense f32 panel; use dot");
    }
}
