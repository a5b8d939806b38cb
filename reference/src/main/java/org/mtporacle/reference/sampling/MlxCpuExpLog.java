package org.mtporacle.reference.sampling;

/**
 * The float32 {@code exp} and {@code log} of MLX's CPU backend with scalar SIMD width (Linux/x86, no Accelerate), which
 * the sampling pipeline needs bit for bit (conformance/SPEC.md, "Random stream for seeded draft sampling").
 */
public final class MlxCpuExpLog {
    private MlxCpuExpLog() {
    }

    /**
     * MLX's CPU {@code exp} for float32: {@code 2^round(x·log2 e) · p(frac)} with a degree-6 Cephes polynomial
     * evaluated by fused multiply-adds, {@code +inf} above 88, {@code 0} below −88, NaN passed through. It is not
     * {@code Math.exp}: results differ from the correctly rounded value by a few ulp.
     */
    public static float exp(float xInit) {
        float x = xInit * 1.442695f; // log2(e) as a float32 literal
        // Width 1: the C++ adds the double literal 0.5, so the rounding happens in double.
        float ipart = (float) Math.floor((double) x + 0.5);
        float fpart = x - ipart;
        float p = 1.535336188319500e-4f;
        p = Math.fma(p, fpart, 1.339887440266574e-3f);
        p = Math.fma(p, fpart, 9.618437357674640e-3f);
        p = Math.fma(p, fpart, 5.550332471162809e-2f);
        p = Math.fma(p, fpart, 2.402264791363012e-1f);
        p = Math.fma(p, fpart, 6.931472028550421e-1f);
        p = Math.fma(p, fpart, 1.000000000000000f);
        if (Float.isNaN(xInit)) {
            return xInit;
        }
        if (xInit > 88.0f) {
            return Float.POSITIVE_INFINITY;
        }
        if (xInit < -88.0f) {
            return 0.0f;
        }
        // 2^ipart built from the exponent bits; ipart + 127 == 0 gives +0, as in the C++ shift.
        float twoToI = Float.intBitsToFloat(((int) ipart + 127) << 23);
        return twoToI * p;
    }

    /**
     * The float32 natural logarithm, rounded from the double-precision logarithm. MLX calls the C library's
     * {@code logf}; glibc's is within one ulp but not always correctly rounded, so this is the one op where a
     * last-bit difference from MLX is possible (conformance/SPEC.md reports how often the cross-check saw one).
     */
    public static float log(float x) {
        return (float) StrictMath.log(x);
    }
}
