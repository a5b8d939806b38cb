package org.mtporacle.reference.targetmodel;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.block.DecoderLayer;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A small deterministic target model for tests and tools: the MTP model's embedding, {@code L} standard gated
 * full-attention layers of the same shape, a final RMSNorm and the model's head. It produces the tapped hiddens that
 * feed {@code prefill}/{@code commit} with either {@link Tap} (spec §11.3), and the log-probs it verifies drafts with.
 * It is not Qwen3.5's real target (no Gated DeltaNet layers): it exists so the lifecycle runs end to end in Java.
 */
public final class ReferenceTarget {
    /** Which hidden of the target feeds the MTP (spec §11.3); every report names the one in use. */
    public enum Tap {
        /** The last layer's residual output before the final norm (the seed's choice, spec §8.1). */
        PRE_NORM,
        /** After the final norm (vLLM, SGLang and llama.cpp's choice for Qwen3.5). */
        POST_NORM
    }

    private final MtpConfig config;
    private final List<DecoderLayer> layers;
    private final float[] finalNorm;
    private final TargetHead head;
    private final Kernels kernels;
    private final Tap tap;

    private ReferenceTarget(MtpConfig config, List<DecoderLayer> layers, float[] finalNorm, TargetHead head,
                            Kernels kernels, Tap tap) {
        this.config = config;
        this.layers = layers;
        this.finalNorm = finalNorm;
        this.head = head;
        this.kernels = kernels;
        this.tap = tap;
    }

    /**
     * A target of {@code layerCount} random layers (weights N(0, 1/in), gains 1 + N(0, 0.1²), seeded) over
     * {@code model}'s embedding and head.
     */
    public static ReferenceTarget random(MtpModel model, int layerCount, long seed, Tap tap, Kernels kernels) {
        if (layerCount < 1) {
            throw new IllegalArgumentException("target: layerCount = " + layerCount + " must be ≥ 1");
        }
        MtpConfig c = model.config();
        SplittableRandom rnd = new SplittableRandom(seed);
        int h = c.hiddenSize();
        int d = c.headDim();
        int inter = c.intermediateSize();
        List<DecoderLayer> layers = new ArrayList<>();
        for (int l = 0; l < layerCount; l++) {
            layers.add(new DecoderLayer(c, new DecoderLayer.Weights(gain(rnd, h),
                    linear(rnd, c.numHeads() * 2 * d, h), linear(rnd, c.numKvHeads() * d, h),
                    linear(rnd, c.numKvHeads() * d, h), linear(rnd, h, c.numHeads() * d),
                    gain(rnd, d), gain(rnd, d), gain(rnd, h),
                    linear(rnd, inter, h), linear(rnd, inter, h), linear(rnd, h, inter)), kernels));
        }
        return new ReferenceTarget(c, layers, gain(rnd, h), new TargetHead(Kernels.offHeap(model.weights()), kernels), kernels, tap);
    }

    public Tap tap() {
        return tap;
    }

    public int vocabSize() {
        return head.vocabSize();
    }

    /** A new request with empty caches. */
    public TargetRequest open() {
        return new TargetRequest(this);
    }

    MtpConfig config() {
        return config;
    }

    /** Runs {@code tokens} through every layer of {@code request}; returns taps and log-probs. */
    TargetRequest.Output forward(TargetRequest request, int[] tokens) {
        int s = tokens.length;
        int h = config.hiddenSize();
        float[] x = head.embed(tokens);
        for (int l = 0; l < layers.size(); l++) {
            x = layers.get(l).forward(x, new org.mtporacle.reference.block.RowKv[] {request.kv(l)}, s, null);
        }
        float[] normed = new float[x.length];
        kernels.rmsNorm(normed, 0, x, 0, finalNorm, h, s, config.rmsNormEps());
        float[] taps = tap == Tap.PRE_NORM ? x : normed;
        return new TargetRequest.Output(taps, head.logProbs(normed, s), s);
    }

    int layerCount() {
        return layers.size();
    }

    private static LinearWeight linear(SplittableRandom rnd, int out, int in) {
        float[] v = new float[out * in];
        double std = 1.0 / Math.sqrt(in);
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) (gaussian(rnd) * std);
        }
        return Kernels.offHeap(new LinearWeight.Dense(HostTensor.ofFloats(v, out, in)));
    }

    private static float[] gain(SplittableRandom rnd, int n) {
        float[] g = new float[n];
        for (int i = 0; i < n; i++) {
            g[i] = (float) (1 + 0.1 * gaussian(rnd));
        }
        return g;
    }

    private static double gaussian(SplittableRandom rnd) {
        double u = rnd.nextDouble();
        double v = rnd.nextDouble();
        return Math.sqrt(-2 * StrictMath.log(1 - u)) * StrictMath.cos(2 * Math.PI * v);
    }
}
