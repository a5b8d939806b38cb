package org.mtporacle.reference.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/** Seeded test weights with their exactly decoded values in f64, built independently of the kernels. */
record TestWeights(LinearWeight weight, double[][] decoded) {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A dense {@code [out, in]} weight of {@code dtype}, values in [-1, 1) rounded to the dtype. */
    static TestWeights dense(DType dtype, int out, int in, SplittableRandom rnd) {
        float[] v = new float[out * in];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        HostTensor t = HostTensor.ofFloats(dtype, v, out, in);
        double[][] d = new double[out][in];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                d[o][i] = t.getDouble((long) o * in + i);
            }
        }
        return new TestWeights(new LinearWeight.Dense(t), d);
    }

    /** An affine weight with random codes, bf16 scales and biases; decoded as {@code scale·q + bias} in f64. */
    static TestWeights affine(int bits, int group, int out, int in, SplittableRandom rnd) {
        int groups = in / group;
        int[][] q = new int[out][in];
        for (int[] row : q) {
            for (int i = 0; i < in; i++) {
                row[i] = rnd.nextInt(1 << bits);
            }
        }
        float[] s = new float[out * groups];
        float[] b = new float[out * groups];
        for (int i = 0; i < s.length; i++) {
            s[i] = (float) (rnd.nextDouble() * 0.1 + 0.01);
            b[i] = (float) (rnd.nextDouble() * 0.2 - 0.1);
        }
        HostTensor scales = HostTensor.ofFloats(DType.BF16, s, out, groups);
        HostTensor biases = HostTensor.ofFloats(DType.BF16, b, out, groups);
        double[][] d = new double[out][in];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                d[o][i] = scales.getDouble((long) o * groups + i / group) * q[o][i]
                        + biases.getDouble((long) o * groups + i / group);
            }
        }
        return new TestWeights(new LinearWeight.Affine(pack(q, bits), scales, biases, bits, group), d);
    }

    /** Packs codes into a U32 {@code [out, in·bits/32]} tensor: code i at bits [i·bits, (i+1)·bits) of the row. */
    static HostTensor pack(int[][] q, int bits) {
        int in = q[0].length;
        int words = in * bits / 32;
        MemorySegment seg = MemorySegment.ofArray(new byte[q.length * words * 4]);
        for (int o = 0; o < q.length; o++) {
            for (int i = 0; i < in; i++) {
                for (int k = 0; k < bits; k++) {
                    if ((q[o][i] >> k & 1) != 0) {
                        int bit = i * bits + k;
                        long at = (long) o * words + bit / 32;
                        seg.setAtIndex(U32, at, seg.getAtIndex(U32, at) | 1 << (bit % 32));
                    }
                }
            }
        }
        return HostTensor.view(DType.U32, new int[] {q.length, words}, seg);
    }

    /** {@code Σ(a−b)²/Σb²} (0 when both are zero). */
    static double nmse(float[] a, double[] b) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < b.length; i++) {
            num += (a[i] - b[i]) * (a[i] - b[i]);
            den += b[i] * b[i];
        }
        return den == 0 ? num : num / den;
    }

    static float[] randomFloats(int n, SplittableRandom rnd) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        return v;
    }
}
