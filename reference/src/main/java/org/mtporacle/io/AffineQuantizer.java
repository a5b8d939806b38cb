package org.mtporacle.io;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpException;

/**
 * MLX affine quantization exactly as MLX's CPU kernel computes it ({@code mlx/backend/cpu/quantized.cpp},
 * {@code quantize}; the graph fallback in {@code mlx/ops.cpp} {@code affine_quantize} agrees), spec §2. Per group of
 * {@code groupSize} values, in f32:
 * <pre>
 *   scale = max((max − min) / (2^bits − 1), 1e-7), negated unless |min| &gt; |max|
 *   edge  = |min| &gt; |max| ? min : max;   q0 = rint(edge / scale)
 *   if q0 ≠ 0: scale = edge / q0, bias = edge   else bias = 0
 *   q     = clamp(rint((w − bias) / scale), 0, 2^bits − 1)
 * </pre>
 * so the edge value of larger magnitude is represented exactly. {@code rint} rounds half to even. Codes use the f32
 * scale and bias; the stored scales and biases are then rounded to the weight's dtype. Codes form one little-endian bit
 * stream per row (code {@code i} at bits {@code [i·bits, (i+1)·bits)}) stored as little-endian U32 words; MLX's 3-,
 * 5- and 6-bit byte packs (8 codes in 3 bytes, 8 in 5, 4 in 3) are that same stream.
 */
public final class AffineQuantizer {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final float EPS = 1e-7f;

    private AffineQuantizer() {
    }

    /**
     * Quantizes a 2-D float weight {@code [out, in]}; scales and biases keep {@code w}'s dtype.
     *
     * @throws MtpException INVALID_ARGUMENT for unsupported bits or group sizes, or {@code in % groupSize != 0}
     */
    public static LinearWeight.Affine quantize(HostTensor w, int bits, int groupSize) {
        if (w.rank() != 2 || !w.dtype().isFloating()) {
            throw MtpException.invalidArgument("quantize: weight must be a 2-D float tensor, got " + w.describe());
        }
        int rows = w.dim(0);
        int in = w.dim(1);
        checkParameters(in, bits, groupSize);
        float[] values = w.toFloatArray();
        int[] codes = new int[rows * (in * bits / 32)];
        float[] scales = new float[rows * (in / groupSize)];
        float[] biases = new float[scales.length];
        quantizeRows(values, rows, in, bits, groupSize, codes, scales, biases);
        DType t = w.dtype() == DType.F64 ? DType.F32 : w.dtype();
        return new LinearWeight.Affine(HostTensor.view(DType.U32, new int[] {rows, in * bits / 32}, wordsOf(codes)),
                HostTensor.ofFloats(t, scales, rows, in / groupSize), HostTensor.ofFloats(t, biases, rows,
                in / groupSize), bits, groupSize);
    }

    /**
     * Quantizes {@code rows × in} row-major values into packed words ({@code rows × in·bits/32}) and f32 scales and
     * biases ({@code rows × in/groupSize}), which the caller rounds to the storage dtype.
     */
    public static void quantizeRows(float[] w, int rows, int in, int bits, int groupSize, int[] codes, float[] scales,
                                    float[] biases) {
        checkParameters(in, bits, groupSize);
        int groups = in / groupSize;
        int wordsPerRow = in * bits / 32;
        int[] q = new int[groupSize];
        float[] sb = new float[2];
        for (int r = 0; r < rows; r++) {
            long acc = 0;
            int accBits = 0;
            int word = r * wordsPerRow;
            for (int g = 0; g < groups; g++) {
                quantizeGroup(w, (long) r * in + (long) g * groupSize, groupSize, bits, q, sb);
                scales[r * groups + g] = sb[0];
                biases[r * groups + g] = sb[1];
                for (int k = 0; k < groupSize; k++) {
                    acc |= (long) q[k] << accBits;
                    accBits += bits;
                    if (accBits >= 32) {
                        codes[word++] = (int) acc;
                        acc >>>= 32;
                        accBits -= 32;
                    }
                }
            }
        }
    }

    /** One group: codes into {@code q}, f32 {@code {scale, bias}} into {@code scaleBias}. */
    static void quantizeGroup(float[] w, long offset, int groupSize, int bits, int[] q, float[] scaleBias) {
        float nBins = (1 << bits) - 1;
        float wMin = Float.POSITIVE_INFINITY;
        float wMax = Float.NEGATIVE_INFINITY;
        int base = Math.toIntExact(offset);
        for (int j = 0; j < groupSize; j++) {
            float v = w[base + j];
            wMax = wMax < v ? v : wMax; // std::max
            wMin = v < wMin ? v : wMin; // std::min
        }
        boolean mask = Math.abs(wMin) > Math.abs(wMax);
        float scale = (wMax - wMin) / nBins;
        scale = scale < EPS ? EPS : scale;
        scale = mask ? scale : -scale;
        float edge = mask ? wMin : wMax;
        float q0 = (float) Math.rint(edge / scale);
        float bias = 0;
        if (q0 != 0) {
            scale = edge / q0;
            bias = edge;
        }
        for (int j = 0; j < groupSize; j++) {
            float c = (float) Math.rint((w[base + j] - bias) / scale);
            c = Math.min(Math.max(c, 0.0f), nBins);
            q[j] = (int) c;
        }
        scaleBias[0] = scale;
        scaleBias[1] = bias;
    }

    /** Code {@code i} of row {@code row} of packed U32 words (spec §2). */
    public static int code(HostTensor codes, int row, int i, int bits) {
        long bit = (long) i * bits;
        long base = (long) row * codes.dim(1);
        long v = codes.getLong(base + (bit >>> 5)) >>> (bit & 31);
        if ((bit & 31) + bits > 32) {
            v |= codes.getLong(base + (bit >>> 5) + 1) << (32 - (bit & 31));
        }
        return (int) (v & ((1L << bits) - 1));
    }

    private static void checkParameters(int in, int bits, int groupSize) {
        if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8) {
            throw MtpException.invalidArgument("quantize: bits = " + bits + ", expected 2, 3, 4, 5, 6 or 8 (spec §2)");
        }
        if (groupSize != 32 && groupSize != 64 && groupSize != 128) {
            throw MtpException.invalidArgument("quantize: group size = " + groupSize + ", expected 32, 64 or 128 "
                    + "(spec §2)");
        }
        if (in % groupSize != 0) {
            throw MtpException.invalidArgument("quantize: in = " + in + " is not a multiple of group size "
                    + groupSize + " (spec §2)");
        }
    }

    static MemorySegment wordsOf(int[] codes) {
        MemorySegment seg = MemorySegment.ofArray(new byte[codes.length * 4]);
        for (int i = 0; i < codes.length; i++) {
            seg.setAtIndex(U32, i, codes[i]);
        }
        return seg;
    }
}
