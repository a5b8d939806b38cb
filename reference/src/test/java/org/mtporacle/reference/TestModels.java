package org.mtporacle.reference;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;

import java.util.List;
import java.util.SplittableRandom;

/** Small random models built in memory for tests: weights N(0, 1/in), norm gains 1 + N(0, 0.1²). */
public final class TestModels {
    private TestModels() {
    }

    /** The {@code tiny} shape: H 64, 4/2 heads, D 16, R 4, I 128, V 512. */
    public static MtpConfig tinyConfig() {
        return new MtpConfig(64, 4, 2, 16, 4, 1e7, 1e-6, 512, 128);
    }

    /** A random model of {@code config} with dense weights of {@code dtype}. */
    public static MtpModel random(MtpConfig c, long seed, DType dtype) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int h = c.hiddenSize();
        int d = c.headDim();
        int i = c.intermediateSize();
        MtpWeights w = new MtpWeights(
                linear(rnd, h, 2 * h, dtype), gain(rnd, h), gain(rnd, h), gain(rnd, h),
                linear(rnd, c.numHeads() * 2 * d, h, dtype), linear(rnd, c.numKvHeads() * d, h, dtype),
                linear(rnd, c.numKvHeads() * d, h, dtype), linear(rnd, h, c.numHeads() * d, dtype),
                gain(rnd, d), gain(rnd, d), gain(rnd, h),
                linear(rnd, i, h, dtype), linear(rnd, i, h, dtype), linear(rnd, h, i, dtype),
                gain(rnd, h), table(rnd, c.vocabSize(), h, dtype), linear(rnd, c.vocabSize(), h, dtype));
        return new MtpModel(c, w, "test-" + Long.toHexString(seed) + "-" + dtype, "in-memory test model", "companion",
                List.of());
    }

    static LinearWeight linear(SplittableRandom rnd, int out, int in, DType dtype) {
        return dense(rnd, out, in, 1.0 / Math.sqrt(in), dtype);
    }

    static LinearWeight table(SplittableRandom rnd, int rows, int cols, DType dtype) {
        return dense(rnd, rows, cols, 1.0, dtype);
    }

    private static LinearWeight dense(SplittableRandom rnd, int out, int in, double std, DType dtype) {
        float[] v = new float[out * in];
        for (int k = 0; k < v.length; k++) {
            v[k] = (float) (gaussian(rnd) * std);
        }
        return new LinearWeight.Dense(HostTensor.ofFloats(v, out, in).convert(dtype));
    }

    static float[] gain(SplittableRandom rnd, int n) {
        float[] g = new float[n];
        for (int k = 0; k < n; k++) {
            g[k] = (float) (1 + 0.1 * gaussian(rnd));
        }
        return g;
    }

    static double gaussian(SplittableRandom rnd) {
        double u = rnd.nextDouble();
        double v = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(1 - u)) * Math.cos(2 * Math.PI * v);
    }

    /** Random finite hiddens {@code [b, l, h]} N(0, 1) as F32. */
    public static HostTensor hiddens(SplittableRandom rnd, int b, int l, int h) {
        float[] v = new float[b * l * h];
        for (int k = 0; k < v.length; k++) {
            v[k] = (float) gaussian(rnd);
        }
        return HostTensor.ofFloats(v, b, l, h);
    }

    /** Random token ids {@code [b, l]} in {@code [0, vocab)}. */
    public static HostTensor tokens(SplittableRandom rnd, int b, int l, int vocab) {
        int[] v = new int[b * l];
        for (int k = 0; k < v.length; k++) {
            v[k] = rnd.nextInt(vocab);
        }
        return HostTensor.ofInts(v, b, l);
    }
}
