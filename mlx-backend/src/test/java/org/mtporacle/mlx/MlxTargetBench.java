package org.mtporacle.mlx;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;
import org.mtporacle.reference.fixture.TargetFixtures;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The MLX target's verify step on real target shapes with synthetic bf16 weights made on the device by MLX's random
 * ops (nothing of that size passes through Java), against the HBM floor measured in the same run: weight bytes a
 * verify reads (every layer's products and the head, f32 as precision=native keeps it) over the device's copy
 * bandwidth. Per preset, compile off and on, B = 1 and 8: a verify of {@code d+1 = 4} tokens after a 16-token
 * prefill, median of {@code rounds} (each followed by a commit of one draft), the ops the backend issues per verify
 * (graph nodes built from Java; a compiled layer counts as its replay, not its kernels).
 *
 * <pre>  MlxTargetBench [presets, comma-separated] [rounds] [device]</pre>
 */
public final class MlxTargetBench {
    private static final int WIDTH = 4;

    private MlxTargetBench() {
    }

    public static void main(String[] args) {
        String[] presets = (args.length > 0 ? args[0] : "qwen3.5-0.8b-target,qwen3.5-27b-target").split(",");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        boolean gpu = !(args.length > 2 && args[2].equals("cpu"));
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        System.out.println("| preset | compile | B | verify W=4 ms (median) | p90 ms | commit ms | ops/verify | weight GB "
                + "| copy GB/s | floor ms | × floor |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|");
        for (String p : presets) {
            for (boolean compile : new boolean[] {false, true}) {
                run(lib, TargetFixtures.preset(p.trim()), compile, rounds, gpu);
            }
        }
    }

    private static void run(MlxLibrary lib, TargetFixtures.Preset p, boolean compile, int rounds, boolean gpu) {
        TargetConfig c = p.config();
        TargetModel model = new TargetModel(c, null, "synthetic-" + p.name(), "MlxTargetBench", "qwen3_5", List.of());
        long[] bytes = new long[1];
        try (MlxTarget t = new MlxTarget(model, lib, MlxStream.open(lib, gpu), MlxDraftModel.Precision.NATIVE,
                MlxC.MLX_BFLOAT16, compile, (ops, dt) -> synthetic(ops, c, bytes, compile))) {
            double bw = t.copyBytesPerSecond(gpu ? 1L << 30 : 1L << 26, 10);
            double floorMs = bytes[0] / bw * 1e3;
            for (int b : new int[] {1, 8}) {
                double[] verify = new double[rounds];
                double[] commit = new double[rounds];
                long ops = 0;
                try (TargetRows g = t.openRows(Collections.nCopies(b, null))) {
                    g.prefill(tokens(b, 16, c.shape().vocabSize(), 1));
                    for (int r = -3; r < rounds; r++) { // three warm-ups (traces, kernel JIT)
                        HostTensor v = tokens(b, WIDTH, c.shape().vocabSize(), 100 + r);
                        long o0 = lib.operations();
                        long t0 = System.nanoTime();
                        g.verify(v);
                        long t1 = System.nanoTime();
                        long o1 = lib.operations();
                        int[] acc = new int[b];
                        Arrays.fill(acc, 1);
                        g.commit(acc);
                        long t2 = System.nanoTime();
                        if (r >= 0) {
                            verify[r] = (t1 - t0) / 1e6;
                            commit[r] = (t2 - t1) / 1e6;
                            ops = o1 - o0;
                        }
                    }
                }
                Arrays.sort(verify);
                Arrays.sort(commit);
                double med = verify[rounds / 2];
                System.out.printf("| %s | %s | %d | %.2f | %.2f | %.2f | %d | %.2f | %.1f | %.2f | %.1f |%n", p.name(),
                        compile ? "on" : "off", b, med, verify[(int) (rounds * 0.9)], commit[rounds / 2], ops,
                        bytes[0] / 1e9, bw / 1e9, floorMs, med / floorMs);
            }
        }
    }

    private static HostTensor tokens(int b, int n, int vocab, long seed) {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
        int[][] rows = new int[b][n];
        for (int[] row : rows) {
            for (int i = 0; i < n; i++) {
                row[i] = rnd.nextInt(vocab);
            }
        }
        return HostTensor.ofIntRows(rows);
    }

    /** Every part of {@code c}'s target with random weights made on the device; adds the bytes a verify reads. */
    private static MlxTarget.Parts synthetic(MlxOps ops, TargetConfig c, long[] bytes, boolean compile) {
        MtpConfig a = c.shape();
        TargetConfig.Gdn g = c.gdn();
        int h = a.hiddenSize();
        int inter = a.intermediateSize();
        Gen gen = new Gen(ops);
        List<AutoCloseable> made = new ArrayList<>();
        Object[] layers = new Object[c.layerCount()];
        for (int l = 0; l < layers.length; l++) {
            MlxArray in = gen.constant(h, 1f, MlxC.MLX_FLOAT32);
            MlxArray post = gen.constant(h, 1f, MlxC.MLX_FLOAT32);
            MlxTargetMlp mlp = new MlxTargetMlp(MlxStack.of(gen.dense(2 * inter, h, bytes), inter, inter),
                    gen.dense(h, inter, bytes), null);
            if (c.layers().get(l) == TargetConfig.LayerType.LINEAR_ATTENTION) {
                int ch = g.convDim();
                int hv = g.numValueHeads();
                MlxStack proj = MlxStack.of(gen.dense(ch + g.valueDim() + 2 * hv, h, bytes), ch, g.valueDim(), hv, hv);
                MlxArray[] taps = new MlxArray[g.convKernel()];
                for (int j = 0; j < taps.length; j++) {
                    taps[j] = gen.constant(ch, 0.25f, MlxC.MLX_FLOAT32);
                }
                MlxArray[] gains = MlxGdn.gains(ops, g, made);
                layers[l] = new MlxGdn(c, in, post, proj, taps, gen.constant(hv, -1f, MlxC.MLX_FLOAT32),
                        gen.constant(hv, 0f, MlxC.MLX_FLOAT32), gen.constant(g.valueHeadDim(), 1f, MlxC.MLX_FLOAT32),
                        gains[0], gains[1], MlxGdn.groups(ops, g, made), gen.dense(h, g.valueDim(), bytes), mlp,
                        gen.constant(1, MlxGdn.SOFTPLUS_THRESHOLD, MlxC.MLX_FLOAT32), MlxC.MLX_BFLOAT16,
                        compile);
            } else {
                int q = 2 * a.numHeads() * a.headDim();
                int kv = a.numKvHeads() * a.headDim();
                layers[l] = new MlxTargetAttention(a, in, post, gen.constant(a.headDim(), 1f, MlxC.MLX_BFLOAT16),
                        gen.constant(a.headDim(), 1f, MlxC.MLX_BFLOAT16), MlxStack.of(gen.dense(q + 2 * kv, h, bytes),
                        q, kv, kv), gen.dense(h, a.numHeads() * a.headDim(), bytes), mlp, MlxC.MLX_BFLOAT16);
            }
        }
        MlxLinear embedding = gen.dense(a.vocabSize(), h, null);
        long[] headBytes = new long[1];
        MlxLinear head = gen.denseAs(a.vocabSize(), h, MlxC.MLX_FLOAT32, headBytes);
        bytes[0] += headBytes[0];
        return new MlxTarget.Parts(layers, embedding, head, gen.constant(h, 1f, MlxC.MLX_FLOAT32),
                new MlxRope(ops, a));
    }

    /** Random device tensors, each made in a scope of its own (its f32 draw freed before the next). */
    private static final class Gen {
        private final MlxOps ops;
        private int key;

        Gen(MlxOps ops) {
            this.ops = ops;
        }

        MlxLinear dense(int out, int in, long[] bytes) {
            return denseAs(out, in, MlxC.MLX_BFLOAT16, bytes);
        }

        /** {@code [out, in]} uniform in ±√(3/in) (unit-variance outputs for unit inputs), as {@code dtype}. */
        MlxLinear denseAs(int out, int in, int dtype, long[] bytes) {
            MlxLibrary lib = ops.library();
            try (MlxScope s = new MlxScope(lib)) {
                MlxOps o = new MlxOps(ops.stream(), s);
                MlxArray u = o.uniform(o.fromUints(new int[] {20261201, key++}, 2), out, in);
                float scale = (float) Math.sqrt(3.0 / in);
                MlxArray w = o.astype(o.multiply(o.subtract(o.multiply(u, o.fromFloats(new float[] {2f}, 1)),
                        o.fromFloats(new float[] {1f}, 1)), o.fromFloats(new float[] {scale}, 1)), dtype);
                MlxArray wt = o.transpose(w, 1, 0);
                o.eval(w);
                o.eval(wt);
                if (bytes != null) {
                    bytes[0] += (long) out * in * (dtype == MlxC.MLX_FLOAT32 ? 4 : 2);
                }
                return new MlxLinear.Dense(s.release(w), s.release(wt));
            }
        }

        MlxArray constant(int n, float value, int dtype) {
            float[] v = new float[n];
            Arrays.fill(v, value);
            MlxArray a = ops.fromFloats(v, n);
            MlxArray x = a.dtype() == dtype ? a : ops.astype(a, dtype);
            ops.eval(x);
            return ops.scope().release(x);
        }
    }
}
