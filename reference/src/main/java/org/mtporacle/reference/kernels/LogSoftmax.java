package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code out[i] = logits[i] − logsumexp(logits)} over {@code n} elements (spec §1.7), and {@link #argmax}.
 *
 * <p>Order: the maximum (exact in any order); {@code Σ exp(l − max)} in f64 with {@link Exp}, into 8 partial sums
 * ({@code i mod 8}, {@code i} ascending, over whole groups of 8), reduced by the halving tree {@code (a_j + a_{j+4})},
 * then {@code j+2}, then {@code j+1}, then the last {@code n mod 8} terms in order; {@code lse = (float) (max +
 * log(sum))} ({@link StrictMath#log}); each output {@code l − lse} in f32. Both modes share this order and formula, so
 * they agree bit for bit (the vector sum needs 8 f64 lanes, otherwise it takes the scalar sum).
 */
final class LogSoftmax {
    private static final VectorSpecies<Double> D8 = DoubleVector.SPECIES_512;
    private static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;

    private LogSoftmax() {
    }

    static void scalar(float[] out, int outOff, float[] logits, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, logits[off + i]);
        }
        float lse = lse(logits, off, n, max);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = logits[off + i] - lse;
        }
    }

    static void vector(float[] out, int outOff, float[] logits, int off, int n) {
        int end = n - n % L;
        FloatVector m = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
        for (int i = 0; i < end; i += L) {
            m = m.max(FloatVector.fromArray(F, logits, off + i));
        }
        float max = m.reduceLanes(VectorOperators.MAX);
        for (int i = end; i < n; i++) {
            max = Math.max(max, logits[off + i]);
        }
        float lse = D8.length() == DoubleVector.SPECIES_PREFERRED.length() ? lseVector(logits, off, n, max)
                : lse(logits, off, n, max);
        for (int i = 0; i < end; i += L) {
            FloatVector.fromArray(F, logits, off + i).sub(lse).intoArray(out, outOff + i);
        }
        for (int i = end; i < n; i++) {
            out[outOff + i] = logits[off + i] - lse;
        }
    }

    private static float lse(float[] logits, int off, int n, float max) {
        int n8 = n - n % 8;
        double[] a = new double[8];
        for (int i = 0; i < n8; i++) {
            a[i % 8] += Exp.scalar((double) logits[off + i] - max);
        }
        return finish(a, logits, off, n8, n, max);
    }

    private static float lseVector(float[] logits, int off, int n, float max) {
        int n8 = n - n % 8;
        DoubleVector acc = DoubleVector.zero(D8);
        for (int i = 0; i < n8; i += 8) {
            DoubleVector x = (DoubleVector) FloatVector.fromArray(F8, logits, off + i)
                    .convertShape(VectorOperators.F2D, D8, 0);
            acc = acc.add(Exp.vector(x.sub(max)));
        }
        return finish(acc.toArray(), logits, off, n8, n, max);
    }

    /** The halving tree over the 8 partial sums, then the tail {@code [n8, n)} in order, then the f32 lse. */
    private static float finish(double[] a, float[] logits, int off, int n8, int n, float max) {
        double sum = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
        for (int i = n8; i < n; i++) {
            sum += Exp.scalar((double) logits[off + i] - max);
        }
        return (float) (max + StrictMath.log(sum));
    }

    /** The index of the largest of {@code n} values (the first one on ties; NaN is never chosen over a number). */
    static int argmax(float[] v, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (v[off + i] > v[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
