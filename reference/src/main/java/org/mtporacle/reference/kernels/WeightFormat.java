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
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/**
 * How one weight's rows are stored, and the vector decode and dot of its chunks (spec §2). The drivers
 * ({@link MatVec}, {@link MatMul}) own the row loop, the threads, the reduction and the scalar tail; a format only
 * handles whole chunks of the vector region {@code [0, vectorEnd)} of a row.
 *
 * <p>Lane order: dense formats keep elements in natural order. Affine weights with 2, 4 or 8 bits load {@code L}
 * code words at once; lane {@code j} of step {@code s} holds element {@code c·j + s} of the chunk ({@code c = 32/bits}
 * codes per word), so activations are first {@link #prepare prepared} in that order. Affine weights with 3, 5 or 6
 * bits use one group per chunk in natural order, decoding codes with scalar bit extraction.
 *
 * <p>Affine chunks are factored: {@code t = Σ_s q_s·x_s} lane-wise ({@code fma}, steps in order), then
 * {@code acc = fma(t, scale_lanes, acc)}, then the bias terms {@code bias_g · Σx_g} (see {@link AffineFormat}).
 */
sealed interface WeightFormat permits WeightFormat.F32, WeightFormat.F16, WeightFormat.Bf16, AffineFormat {
    ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    ValueLayout.OfFloat F32L = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    VectorSpecies<Integer> I = F.withLanes(int.class);
    VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(L * 16));

    /** The format of {@code w}, bound to its data. */
    static WeightFormat of(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> switch (d.weight().dtype()) {
                case F32 -> new F32(d.weight().data(), d.inFeatures());
                case F16 -> new F16(d.weight().data(), d.inFeatures());
                case BF16 -> new Bf16(d.weight().data(), d.inFeatures());
                default -> throw new IllegalArgumentException("weight format: unsupported " + d.weight().describe());
            };
            case LinearWeight.Affine a -> new AffineFormat(a);
        };
    }

    /** Elements per chunk of the vector path. */
    int chunk();

    /** Input features per row. */
    int in();

    /** The end of the vector region: whole chunks; {@code [vectorEnd, in)} is the scalar tail. */
    default int vectorEnd() {
        return in() - in() % chunk();
    }

    /** Floats {@link #prepare} writes per input row. */
    default int preparedSize() {
        return in();
    }

    /**
     * Writes one input row {@code x[0, in)} as {@link #dot} reads it: the vector region in this format's lane order,
     * then the tail {@code [vectorEnd, in)} in natural order, then any per-input terms (a copy for dense formats).
     */
    default void prepare(float[] dst, int dstOff, float[] x, int xOff) {
        System.arraycopy(x, xOff, dst, dstOff, in());
    }

    /**
     * {@link LaneSum} of the lane accumulator of the vector region of {@code row} against prepared {@code xp}
     * (affine: bias terms included). It returns a float, not the vector, so no vector is boxed when the call is not inlined.
     */
    float dot(int row, float[] xp, int xpOff, float[] scratch);

    /** Writes the vector region of dense {@code row} as f32 to {@code dst} (a matmul panel); affine rows have none. */
    void decode(float[] dst, int dstOff, int row);

    /** Scratch floats {@link #dot} needs. */
    default int scratchSize() {
        return 0;
    }

    /** Dense f32 rows. */
    record F32(MemorySegment data, int in) implements WeightFormat {
        public int chunk() {
            return L;
        }

        public float dot(int row, float[] xp, int xpOff, float[] scratch) {
            FloatVector acc = FloatVector.zero(F);
            long base = (long) row * in * 4;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                acc = FloatVector.fromMemorySegment(F, data, base + 4L * i, ByteOrder.LITTLE_ENDIAN)
                        .fma(FloatVector.fromArray(F, xp, xpOff + i), acc);
            }
            return LaneSum.sum(acc);
        }

        public void decode(float[] dst, int dstOff, int row) {
            MemorySegment.copy(data, F32L, (long) row * in * 4, dst, dstOff, vectorEnd());
        }
    }

    /** Dense bfloat16 rows: widen each short to an int and shift it into the high half. */
    record Bf16(MemorySegment data, int in) implements WeightFormat {
        public int chunk() {
            return L;
        }

        static FloatVector load(MemorySegment data, long byteOff) {
            return ((IntVector) ShortVector.fromMemorySegment(S, data, byteOff, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
        }

        public float dot(int row, float[] xp, int xpOff, float[] scratch) {
            FloatVector acc = FloatVector.zero(F);
            long base = (long) row * in * 2;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                acc = load(data, base + 2L * i).fma(FloatVector.fromArray(F, xp, xpOff + i), acc);
            }
            return LaneSum.sum(acc);
        }

        /**
         * {@link #dot} of rows {@code row} and {@code row2} into {@code res[0, 2)}, their chains interleaved: each
         * row's arithmetic is {@link #dot}'s, so the results are the same bits (see {@link MatVec} for why pairs).
         */
        void dot2(int row, int row2, float[] xp, int xpOff, float[] res) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            long b0 = (long) row * in * 2;
            long b1 = (long) row2 * in * 2;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                FloatVector x = FloatVector.fromArray(F, xp, xpOff + i);
                a0 = load(data, b0 + 2L * i).fma(x, a0);
                a1 = load(data, b1 + 2L * i).fma(x, a1);
            }
            res[0] = LaneSum.sum(a0);
            res[1] = LaneSum.sum(a1);
        }

        /**
         * {@link #dot} of the four rows {@code row + k·step} ({@code k < 4}) into {@code res[0, 4)}, their chains
         * interleaved: each row's arithmetic is {@link #dot}'s, so the results are the same bits (see {@link MatVec}
         * for why four rows far apart).
         */
        void dot4(int row, int step, float[] xp, int xpOff, float[] res) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            long b0 = (long) row * in * 2;
            long s = (long) step * in * 2;
            long b1 = b0 + s;
            long b2 = b1 + s;
            long b3 = b2 + s;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                FloatVector x = FloatVector.fromArray(F, xp, xpOff + i);
                a0 = load(data, b0 + 2L * i).fma(x, a0);
                a1 = load(data, b1 + 2L * i).fma(x, a1);
                a2 = load(data, b2 + 2L * i).fma(x, a2);
                a3 = load(data, b3 + 2L * i).fma(x, a3);
            }
            res[0] = LaneSum.sum(a0);
            res[1] = LaneSum.sum(a1);
            res[2] = LaneSum.sum(a2);
            res[3] = LaneSum.sum(a3);
        }

        /**
         * {@code out[outOff + o + k·quarter] = LaneSum(dot) + 0f} for {@code o ∈ [from, from + quarter)},
         * {@code k < 4}, when the row has no scalar tail ({@code vectorEnd() == in}): {@link #dot4} row by row with
         * the results stored directly ({@code + 0f} is {@link MatVec}'s empty tail, so the same bits as
         * {@link MatVec#finish}).
         */
        void quarters(float[] out, int outOff, float[] xp, int from, int quarter) {
            long rowBytes = 2L * in;
            long s = quarter * rowBytes;
            for (int o = from, end = from + quarter; o < end; o++) {
                FloatVector a0 = FloatVector.zero(F);
                FloatVector a1 = a0;
                FloatVector a2 = a0;
                FloatVector a3 = a0;
                long b0 = o * rowBytes;
                long b1 = b0 + s;
                long b2 = b1 + s;
                long b3 = b2 + s;
                for (int i = 0; i < in; i += L) {
                    FloatVector x = FloatVector.fromArray(F, xp, i);
                    a0 = load(data, b0 + 2L * i).fma(x, a0);
                    a1 = load(data, b1 + 2L * i).fma(x, a1);
                    a2 = load(data, b2 + 2L * i).fma(x, a2);
                    a3 = load(data, b3 + 2L * i).fma(x, a3);
                }
                out[outOff + o] = LaneSum.sum(a0) + 0f;
                out[outOff + o + quarter] = LaneSum.sum(a1) + 0f;
                out[outOff + o + 2 * quarter] = LaneSum.sum(a2) + 0f;
                out[outOff + o + 3 * quarter] = LaneSum.sum(a3) + 0f;
            }
        }

        /** Whether {@link #staggered} applies: rows of 64 to 256 chunks, in whole blocks (see {@link MatVec}). */
        boolean staggers() {
            int per = in / L;
            return in % L == 0 && per >= 64 && per <= 256 && per % 4 == 0 && per % block(per) == 0;
        }

        /** Chunks per block of {@link #staggered} for rows of {@code per} chunks: a quarter row, at most 32. */
        private static int block(int per) {
            return Math.min(per / 4, 32);
        }

        /**
         * {@link #quarters} with the four streams out of step, where {@link #staggers}: each stream is read in
         * blocks of a quarter row or 32 chunks (1 KiB of BF16 at 16 lanes), whichever is less, streams 1 and 3 two
         * blocks behind streams 0 and 2 (half a 4 KiB page from 2048 columns on). Each row still takes its chunks in
         * order into its own accumulator from zero, so the results are {@link #quarters}'s bits; only the order in
         * which the four streams are read changes (see {@link MatVec} for why). One loop serves every block: in the
         * first two, streams 1 and 3 are not yet due, and in the last two, streams 0 and 2 are done; those run over a
         * block they read anyway and their sums are dropped. Positions advance by counters (no division per block).
         */
        void staggered(float[] out, int outOff, float[] xp, int from, int quarter) {
            int per = in / L; // chunks per row
            int blk = block(per); // chunks per block
            long step = 2L * L * blk; // bytes per block
            long gap = 2 * (quarter * 2L * in); // stream 0 to stream 2, stream 1 to stream 3
            int blocks = quarter * (per / blk); // blocks per stream
            long ra = from * 2L * in; // the block streams 0, 2 read (their last once they are done)
            long rb = ra + quarter * 2L * in; // the block streams 1, 3 read (their first until they are due)
            int ka = 0; // chunk of streams 0, 2 within their row
            int kb = 0;
            int oa = outOff + from; // output of stream 0's row
            int ob = oa + quarter;
            FloatVector zero = FloatVector.zero(F);
            FloatVector a0 = zero;
            FloatVector a1 = zero;
            FloatVector a2 = zero;
            FloatVector a3 = zero;
            for (int b = 0; b < blocks + 2; b++) {
                for (int i = 0, n = blk * L; i < n; i += L) {
                    FloatVector va = FloatVector.fromArray(F, xp, ka * L + i);
                    FloatVector vb = FloatVector.fromArray(F, xp, kb * L + i);
                    a0 = load(data, ra + 2L * i).fma(va, a0);
                    a1 = load(data, rb + 2L * i).fma(vb, a1);
                    a2 = load(data, ra + gap + 2L * i).fma(va, a2);
                    a3 = load(data, rb + gap + 2L * i).fma(vb, a3);
                }
                if (b < blocks) { // streams 0 and 2 read a block of theirs
                    ka += blk;
                    if (ka == per) { // and finished a row
                        out[oa] = LaneSum.sum(a0) + 0f;
                        out[oa + 2 * quarter] = LaneSum.sum(a2) + 0f;
                        a0 = zero;
                        a2 = zero;
                        ka = 0;
                        oa++;
                    }
                    if (b + 1 < blocks) {
                        ra += step;
                    }
                }
                if (b >= 2) { // streams 1 and 3 read a block of theirs
                    kb += blk;
                    if (kb == per) { // and finished a row
                        out[ob] = LaneSum.sum(a1) + 0f;
                        out[ob + 2 * quarter] = LaneSum.sum(a3) + 0f;
                        a1 = zero;
                        a3 = zero;
                        kb = 0;
                        ob++;
                    }
                    if (b + 1 < blocks + 2) {
                        rb += step;
                    }
                } else { // not due yet: their sums are dropped
                    a1 = zero;
                    a3 = zero;
                }
            }
        }

        public void decode(float[] dst, int dstOff, int row) {
            long base = (long) row * in * 2;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                load(data, base + 2L * i).intoArray(dst, dstOff + i);
            }
        }
    }

    /**
     * Dense IEEE binary16 rows, widened exactly as {@link Float#float16ToFloat}: the exponent and mantissa bits move
     * to f32 position and the value is scaled by 2^112 (exact for normals and subnormals); Inf/NaN get the f32
     * all-ones exponent (NaNs quieted, as the JDK's conversion does); the sign is or-ed back.
     */
    record F16(MemorySegment data, int in) implements WeightFormat {
        public int chunk() {
            return L;
        }

        static FloatVector load(MemorySegment data, long byteOff) {
            IntVector h = (IntVector) ShortVector.fromMemorySegment(S, data, byteOff, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.S2I, I, 0);
            IntVector em = h.and(0x7FFF).lanewise(VectorOperators.LSHL, 13);
            IntVector bits = em.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts();
            bits = bits.blend(em.or(0x7F800000), h.and(0x7C00).eq(0x7C00));
            bits = bits.blend(bits.or(0x00400000), h.and(0x7FFF).compare(VectorOperators.GT, 0x7C00));
            return bits.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
        }

        public float dot(int row, float[] xp, int xpOff, float[] scratch) {
            FloatVector acc = FloatVector.zero(F);
            long base = (long) row * in * 2;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                acc = load(data, base + 2L * i).fma(FloatVector.fromArray(F, xp, xpOff + i), acc);
            }
            return LaneSum.sum(acc);
        }

        public void decode(float[] dst, int dstOff, int row) {
            long base = (long) row * in * 2;
            for (int i = 0, n = vectorEnd(); i < n; i += L) {
                load(data, base + 2L * i).intoArray(dst, dstOff + i);
            }
        }
    }

    /** Decodes {@code n} elements of a float tensor from {@code index} to f32 ({@code dst} at {@code dstOff}). */
    static void floats(float[] dst, int dstOff, HostTensor t, long index, int n) {
        MemorySegment d = t.data();
        switch (t.dtype()) {
            case F32 -> MemorySegment.copy(d, F32L, index * 4, dst, dstOff, n);
            case BF16 -> {
                for (int i = 0; i < n; i++) {
                    dst[dstOff + i] = Float.intBitsToFloat((d.getAtIndex(I16, index + i) & 0xFFFF) << 16);
                }
            }
            case F16 -> {
                for (int i = 0; i < n; i++) {
                    dst[dstOff + i] = Float.float16ToFloat(d.getAtIndex(I16, index + i));
                }
            }
            default -> {
                for (int i = 0; i < n; i++) {
                    dst[dstOff + i] = t.getFloat(index + i);
                }
            }
        }
    }

    /** Whether {@code t} is non-null and of dtype {@code d}. */
    static boolean is(HostTensor t, DType d) {
        return t != null && t.dtype() == d;
    }
}
