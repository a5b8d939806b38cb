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
import org.mtporacle.api.LinearWeight;

/**
 * MLX affine-quantized rows (spec §2), {@code w = scale·q + bias} per group: {@code Affine(bits, groupSize)} of
 * {@link WeightFormat}. Codes are read exactly as {@link WeightRows#decodeRange} defines them (a little-endian bit
 * stream of little-endian u32 words per row); tests hold every fast path to that definition.
 *
 * <p>2-, 4- and 8-bit codes: a chunk is {@code L} words ({@code C = L·32/bits} elements); step {@code s} of lane
 * {@code j} is element {@code c·j + s}. 3-, 5- and 6-bit codes: a chunk is one group in natural order.
 */
record AffineFormat(LinearWeight.Affine w, int in, int words, int groups, int codesPerWord, int chunk,
        VectorShuffle<Float> laneGroup) implements WeightFormat {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    AffineFormat(LinearWeight.Affine w) {
        this(w, w.inFeatures(), w.codes().dim(1), w.scales().dim(1), 32 % w.bits() == 0 ? 32 / w.bits() : 0,
                32 % w.bits() == 0 ? L * 32 / w.bits() : w.groupSize(),
                VectorShuffle.fromOp(F, j -> 32 % w.bits() == 0 ? (32 / w.bits()) * j / w.groupSize() : 0));
    }

    int bits() {
        return w.bits();
    }

    int groupSize() {
        return w.groupSize();
    }

    /** Groups inside the vector region; their bias terms are added by {@link #biasDot}. */
    int vectorGroups() {
        return vectorEnd() / w.groupSize();
    }

    @Override
    public int scratchSize() {
        return vectorEnd() / chunk * L + groups + L + chunk;
    }

    @Override
    public void permute(float[] dst, int dstOff, float[] x, int xOff) {
        if (codesPerWord == 0) {
            System.arraycopy(x, xOff, dst, dstOff, vectorEnd());
            return;
        }
        int c = codesPerWord;
        for (int k = 0, n = vectorEnd(); k < n; k += chunk) {
            for (int s = 0; s < c; s++) {
                for (int j = 0; j < L; j++) {
                    dst[dstOff + k + s * L + j] = x[xOff + k + c * j + s];
                }
            }
        }
    }

    /** {@code Σx} over each group of the vector region, elements in order: {@code dst[g]}. */
    void groupSums(float[] dst, int dstOff, float[] x, int xOff) {
        int g = w.groupSize();
        for (int k = 0, n = vectorGroups(); k < n; k++) {
            float s = 0f;
            for (int i = 0; i < g; i++) {
                s += x[xOff + k * g + i];
            }
            dst[dstOff + k] = s;
        }
    }

    /** {@code Σ_g bias[g] · gsum[g]} over the vector groups, in group order (0 without biases). */
    float biasDot(float[] bias, int biasOff, float[] gsum, int gOff) {
        float s = 0f;
        for (int k = 0, n = vectorGroups(); k < n && w.biases() != null; k++) {
            s += bias[biasOff + k] * gsum[gOff + k];
        }
        return s;
    }

    /** The f32 biases of {@code row} (vector groups only) into {@code dst}. */
    void biases(float[] dst, int dstOff, int row) {
        if (w.biases() != null) {
            WeightFormat.floats(dst, dstOff, w.biases(), (long) row * groups, vectorGroups());
        }
    }

    /** Per-chunk lane scales {@code dst[k·L + j]} of {@code row}; {@code tmp} holds {@code groups + L} floats. */
    private void laneScales(float[] dst, int dstOff, int row, float[] tmp, int tmpOff) {
        WeightFormat.floats(tmp, tmpOff, w.scales(), (long) row * groups, groups);
        int g = w.groupSize();
        for (int k = 0, c = 0, n = vectorEnd(); k < n; k += chunk, c++) {
            FloatVector v = chunk <= g ? FloatVector.broadcast(F, tmp[tmpOff + k / g])
                    : FloatVector.fromArray(F, tmp, tmpOff + k / g).rearrange(laneGroup);
            v.intoArray(dst, dstOff + c * L);
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

    private FloatVector q(IntVector words, int s) {
        return (FloatVector) words.lanewise(VectorOperators.LSHR, s * w.bits()).and((1 << w.bits()) - 1)
                .convert(VectorOperators.I2F, 0);
    }

    @Override
    public float dot(int row, float[] xp, int xpOff, float[] scratch) {
        int chunks = vectorEnd() / chunk;
        int codesOff = chunks * L + groups + L;
        laneScales(scratch, 0, row, scratch, chunks * L);
        FloatVector acc = FloatVector.zero(F);
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        int k = 0;
        if (codesPerWord != 0) {
            // Two chunks at a time: independent fma chains for latency; acc still takes chunk k, then k + 1.
            for (; k + 1 < chunks; k += 2) {
                IntVector w0 = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * k * L, ByteOrder.LITTLE_ENDIAN);
                IntVector w1 = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * (k + 1) * L,
                        ByteOrder.LITTLE_ENDIAN);
                FloatVector t0 = FloatVector.zero(F);
                FloatVector t1 = FloatVector.zero(F);
                int xb = xpOff + k * chunk;
                for (int s = 0; s < codesPerWord; s++) {
                    t0 = q(w0, s).fma(FloatVector.fromArray(F, xp, xb + s * L), t0);
                    t1 = q(w1, s).fma(FloatVector.fromArray(F, xp, xb + chunk + s * L), t1);
                }
                acc = t0.fma(FloatVector.fromArray(F, scratch, k * L), acc);
                acc = t1.fma(FloatVector.fromArray(F, scratch, (k + 1) * L), acc);
            }
        }
        for (; k < chunks; k++) {
            FloatVector t = FloatVector.zero(F);
            int xb = xpOff + k * chunk;
            if (codesPerWord != 0) {
                IntVector wv = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * k * L, ByteOrder.LITTLE_ENDIAN);
                for (int s = 0; s < codesPerWord; s++) {
                    t = q(wv, s).fma(FloatVector.fromArray(F, xp, xb + s * L), t);
                }
            } else {
                codes(scratch, codesOff, row, k * chunk, chunk);
                for (int s = 0; s < chunk; s += L) {
                    t = FloatVector.fromArray(F, scratch, codesOff + s).fma(FloatVector.fromArray(F, xp, xb + s), t);
                }
            }
            acc = t.fma(FloatVector.fromArray(F, scratch, k * L), acc);
        }
        return LaneSum.sum(acc);
    }

    @Override
    public void decode(float[] dst, int dstOff, float[] scales, int scalesOff, int row) {
        int chunks = vectorEnd() / chunk;
        float[] tmp = new float[groups + L];
        laneScales(scales, scalesOff, row, tmp, 0);
        if (codesPerWord == 0) {
            codes(dst, dstOff, row, 0, vectorEnd());
            return;
        }
        MemorySegment d = w.codes().data();
        long base = (long) row * words * 4;
        for (int k = 0; k < chunks; k++) {
            IntVector wv = IntVector.fromMemorySegment(WeightFormat.I, d, base + 4L * k * L, ByteOrder.LITTLE_ENDIAN);
            for (int s = 0; s < codesPerWord; s++) {
                q(wv, s).intoArray(dst, dstOff + k * chunk + s * L);
            }
        }
    }
}
