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
 * tail), so the modes agree bit for bit. {@link #vectorRows} computes several rows {@code c_r = a_r · B} against one
 * {@code B}: each row's arithmetic is exactly {@link #vector}'s, four rows share every load of {@code B}.
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

    /**
     * {@code rows} rows {@code c_r[j] = Σ_{p<P} a_r[p] · B[p, j]}: {@code a_r} at {@code aOff + r·aStride}, {@code c_r}
     * at {@code cOff + r·cStride}. The definition: {@link #scalar} row by row.
     */
    static void scalarRows(float[] c, int cOff, int cStride, float[] a, int aOff, int aStride, float[] b, int bOff,
                           int bStride, int rows, int terms, int cols) {
        for (int r = 0; r < rows; r++) {
            scalar(c, cOff + r * cStride, a, aOff + r * aStride, b, bOff, bStride, terms, cols);
        }
    }

    /**
     * {@link #scalarRows} with four rows at a time sharing each load of {@code B} (the chunked delta rule's products
     * with the state, whose 64 KiB per head outgrow L1); every output takes {@link #vector}'s {@code fma}s in its
     * order, so the bits are {@link #vector}'s row by row.
     */
    static void vectorRows(float[] c, int cOff, int cStride, float[] a, int aOff, int aStride, float[] b, int bOff,
                           int bStride, int rows, int terms, int cols) {
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            int j = 0;
            for (; j + 4 * L <= cols; j += 4 * L) {
                four(c, cOff + r * cStride + j, cStride, a, aOff + r * aStride, aStride, b, bOff + j, bStride, terms);
            }
            for (int q = 0; q < 4; q++) {
                vector(c, cOff + (r + q) * cStride + j, a, aOff + (r + q) * aStride, b, bOff + j, bStride, terms,
                        cols - j);
            }
        }
        for (; r < rows; r++) {
            vector(c, cOff + r * cStride, a, aOff + r * aStride, b, bOff, bStride, terms, cols);
        }
    }

    /** Rows {@code c_0..c_3}, columns {@code [0, 4L)} from {@code cOff} and {@code bOff}: 16 accumulators. */
    private static void four(float[] c, int cOff, int cStride, float[] a, int aOff, int aStride, float[] b, int bOff,
                             int bStride, int terms) {
        FloatVector z = FloatVector.zero(F);
        FloatVector c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        FloatVector c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
        for (int p = 0, at = bOff; p < terms; p++, at += bStride) {
            FloatVector b0 = FloatVector.fromArray(F, b, at);
            FloatVector b1 = FloatVector.fromArray(F, b, at + L);
            FloatVector b2 = FloatVector.fromArray(F, b, at + 2 * L);
            FloatVector b3 = FloatVector.fromArray(F, b, at + 3 * L);
            FloatVector a0 = FloatVector.broadcast(F, a[aOff + p]);
            c00 = a0.fma(b0, c00); c01 = a0.fma(b1, c01); c02 = a0.fma(b2, c02); c03 = a0.fma(b3, c03);
            FloatVector a1 = FloatVector.broadcast(F, a[aOff + aStride + p]);
            c10 = a1.fma(b0, c10); c11 = a1.fma(b1, c11); c12 = a1.fma(b2, c12); c13 = a1.fma(b3, c13);
            FloatVector a2 = FloatVector.broadcast(F, a[aOff + 2 * aStride + p]);
            c20 = a2.fma(b0, c20); c21 = a2.fma(b1, c21); c22 = a2.fma(b2, c22); c23 = a2.fma(b3, c23);
            FloatVector a3 = FloatVector.broadcast(F, a[aOff + 3 * aStride + p]);
            c30 = a3.fma(b0, c30); c31 = a3.fma(b1, c31); c32 = a3.fma(b2, c32); c33 = a3.fma(b3, c33);
        }
        store(c, cOff, c00, c01, c02, c03);
        store(c, cOff + cStride, c10, c11, c12, c13);
        store(c, cOff + 2 * cStride, c20, c21, c22, c23);
        store(c, cOff + 3 * cStride, c30, c31, c32, c33);
    }

    private static void store(float[] c, int off, FloatVector v0, FloatVector v1, FloatVector v2, FloatVector v3) {
        v0.intoArray(c, off);
        v1.intoArray(c, off + L);
        v2.intoArray(c, off + 2 * L);
        v3.intoArray(c, off + 3 * L);
    }
}
