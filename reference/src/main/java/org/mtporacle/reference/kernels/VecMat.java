package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * {@code c[j] = Σ_{p<P} a[p] · B[p, j]} for {@code j < cols}: a row times a matrix whose rows {@code B[p]} lie
 * {@code bStride} apart from {@code bOff}; {@code c} is overwritten. The products of the chunked delta rule
 * (spec §13.2) are all of this shape, so each walks the contiguous dimension of its operands.
 *
 * <p>Order: per {@code j}, {@code acc = fma(a[p], B[p, j], acc)} from 0 with {@code p} ascending, in f32. The vector
 * form runs the same {@code fma}s on {@code L} columns at once (four vectors at a time, then one, then the scalar
 * tail), so the modes agree bit for bit.
 */
final class VecMat {
    private VecMat() {
    }

    static void scalar(float[] c, int cOff, float[] a, int aOff, float[] b, int bOff, int bStride, int terms,
                       int cols) {
        for (int j = 0; j < cols; j++) {
            float acc = 0f;
            for (int p = 0, at = bOff + j; p < terms; p++, at += bStride) {
                acc = Math.fma(a[aOff + p], b[at], acc);
            }
            c[cOff + j] = acc;
        }
    }

    static void vector(float[] c, int cOff, float[] a, int aOff, float[] b, int bOff, int bStride, int terms,
                       int cols) {
        int j = 0;
        for (; j + 4 * L <= cols; j += 4 * L) {
            FloatVector c0 = FloatVector.zero(F), c1 = c0, c2 = c0, c3 = c0;
            for (int p = 0, at = bOff + j; p < terms; p++, at += bStride) {
                FloatVector ap = FloatVector.broadcast(F, a[aOff + p]);
                c0 = ap.fma(FloatVector.fromArray(F, b, at), c0);
                c1 = ap.fma(FloatVector.fromArray(F, b, at + L), c1);
                c2 = ap.fma(FloatVector.fromArray(F, b, at + 2 * L), c2);
                c3 = ap.fma(FloatVector.fromArray(F, b, at + 3 * L), c3);
            }
            c0.intoArray(c, cOff + j);
            c1.intoArray(c, cOff + j + L);
            c2.intoArray(c, cOff + j + 2 * L);
            c3.intoArray(c, cOff + j + 3 * L);
        }
        for (; j + L <= cols; j += L) {
            FloatVector acc = FloatVector.zero(F);
            for (int p = 0, at = bOff + j; p < terms; p++, at += bStride) {
                acc = FloatVector.broadcast(F, a[aOff + p]).fma(FloatVector.fromArray(F, b, at), acc);
            }
            acc.intoArray(c, cOff + j);
        }
        scalar(c, cOff + j, a, aOff, b, bOff + j, bStride, terms, cols - j);
    }
}
