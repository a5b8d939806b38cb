package org.mtporacle.reference.block;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The MoE MLP (spec §12.3) against an independent f64 computation, and its structural promises: only chosen experts'
 * weights are read, results are bit-identical across thread counts, and batched rows equal rows alone.
 */
class MoeMlpTest {
    private static final long SEED = 1812L;
    private static final int H = 128;
    private static final int I = 256;
    private static final int E = 8;
    private static final int K = 3;
    /** f32 against f64 on N(0, 1/in) weights and N(0, 1) inputs. */
    private static final double NMSE = 1e-10;

    private static LinearWeight dense(SplittableRandom rnd, int out, int in, double fill) {
        float[] v = new float[out * in];
        for (int i = 0; i < v.length; i++) {
            v[i] = Double.isNaN(fill) ? (float) ((rnd.nextDouble() * 2 - 1) * Math.sqrt(3.0 / in)) : (float) fill;
        }
        return new LinearWeight.Dense(HostTensor.ofFloats(v, out, in));
    }

    private static MlpWeights.Dense swiglu(SplittableRandom rnd, int width) {
        return new MlpWeights.Dense(dense(rnd, width, H, Double.NaN), dense(rnd, width, H, Double.NaN),
                dense(rnd, H, width, Double.NaN));
    }

    private static MlpWeights.Moe weights(SplittableRandom rnd) {
        List<MlpWeights.Dense> experts = new ArrayList<>();
        LinearWeight router = dense(rnd, E, H, Double.NaN);
        for (int e = 0; e < E; e++) {
            experts.add(swiglu(rnd, I));
        }
        return new MlpWeights.Moe(router, experts, swiglu(rnd, 64), dense(rnd, 1, H, Double.NaN), K, true);
    }

    private static float[] inputs(SplittableRandom rnd, int rows) {
        float[] n = new float[rows * H];
        for (int i = 0; i < n.length; i++) {
            n[i] = (float) (rnd.nextDouble() * 4 - 2);
        }
        return n;
    }

    private static float[] run(MlpWeights.Moe w, float[] n, int rows, KernelMode mode, int threads,
                               ForwardTrace trace) {
        try (Kernels k = new Kernels(mode, threads)) {
            RowKv[] kvs = new RowKv[rows];
            for (int r = 0; r < rows; r++) {
                kvs[r] = new RowKv(1, 1);
            }
            return new MoeMlp((MlpWeights.Moe) Kernels.offHeap(w), H, k).forward(n, kvs, 1, trace, null);
        }
    }

    @Test
    void eachRowMatchesAnF64MixtureOfItsTopKExpertsPlusTheGatedSharedExpert() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        MlpWeights.Moe w = weights(rnd);
        int rows = 5;
        float[] n = inputs(rnd, rows);
        for (KernelMode mode : KernelMode.values()) {
            float[] got = run(w, n, rows, mode, 2, null);
            for (int r = 0; r < rows; r++) {
                double[] x = new double[H];
                for (int i = 0; i < H; i++) {
                    x[i] = n[r * H + i];
                }
                assertThat(nmse(Arrays.copyOfRange(got, r * H, (r + 1) * H), f64(w, x))).as("%s row %d", mode, r)
                        .isLessThan(NMSE);
            }
        }
    }

    /** The spec's formula in f64: softmax, top-K by a sort, renormalise, Σ w·SwiGLU + σ(gate)·shared. */
    private static double[] f64(MlpWeights.Moe w, double[] x) {
        double[] logits = matvec(w.router(), x);
        double max = Arrays.stream(logits).max().orElseThrow();
        double[] p = Arrays.stream(logits).map(l -> Math.exp(l - max)).toArray();
        double sum = Arrays.stream(p).sum();
        Integer[] order = new Integer[E];
        for (int e = 0; e < E; e++) {
            order[e] = e;
            p[e] /= sum;
        }
        Arrays.sort(order, (a, b) -> p[a] != p[b] ? Double.compare(p[b], p[a]) : Integer.compare(a, b));
        double chosen = 0;
        for (int j = 0; j < K; j++) {
            chosen += p[order[j]];
        }
        double[] out = new double[H];
        for (int j = 0; j < K; j++) {
            double[] y = swiglu(w.experts().get(order[j]), x);
            for (int i = 0; i < H; i++) {
                out[i] += p[order[j]] / chosen * y[i];
            }
        }
        double g = 1 / (1 + Math.exp(-matvec(w.sharedExpertGate(), x)[0]));
        double[] s = swiglu(w.sharedExpert(), x);
        for (int i = 0; i < H; i++) {
            out[i] += g * s[i];
        }
        return out;
    }

    private static double[] swiglu(MlpWeights.Dense d, double[] x) {
        double[] gate = matvec(d.gateProj(), x);
        double[] up = matvec(d.upProj(), x);
        for (int i = 0; i < gate.length; i++) {
            gate[i] = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
        }
        return matvec(d.downProj(), gate);
    }

    private static double[] matvec(LinearWeight lw, double[] x) {
        HostTensor t = ((LinearWeight.Dense) lw).weight();
        double[] y = new double[t.dim(0)];
        for (int o = 0; o < y.length; o++) {
            for (int i = 0; i < x.length; i++) {
                y[o] += t.getDouble((long) o * x.length + i) * x[i];
            }
        }
        return y;
    }

    private static double nmse(float[] a, double[] b) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < b.length; i++) {
            num += (a[i] - b[i]) * (a[i] - b[i]);
            den += b[i] * b[i];
        }
        return num / den;
    }

    @Test
    void aDraftStepReadsOnlyTheChosenExpertsWeights() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        MlpWeights.Moe w = weights(rnd);
        float[] n = inputs(rnd, 1);
        ForwardTrace trace = new ForwardTrace();
        float[] clean = run(w, n, 1, KernelMode.VECTOR, 1, trace);
        float[] idx = trace.get("topk_indices");
        List<MlpWeights.Dense> poisoned = new ArrayList<>(w.experts());
        int unchosen = 0;
        for (int e = 0; e < E; e++) {
            final int x = e;
            boolean picked = false;
            for (float c : idx) {
                picked |= (int) c == x;
            }
            if (!picked) {
                poisoned.set(e, new MlpWeights.Dense(dense(rnd, I, H, Double.POSITIVE_INFINITY),
                        dense(rnd, I, H, Float.NaN), dense(rnd, H, I, Float.NaN)));
                unchosen++;
            }
        }
        assertThat(unchosen).isEqualTo(E - K);
        MlpWeights.Moe w2 = new MlpWeights.Moe(w.router(), poisoned, w.sharedExpert(), w.sharedExpertGate(), K, true);
        assertThat(run(w2, n, 1, KernelMode.VECTOR, 1, null)).as("NaN/∞ in unchosen experts never read")
                .containsExactly(clean);
    }

    @Test
    void resultsAreBitIdenticalAcrossThreadCountsAndBatchedRowsEqualRowsAlone() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        MlpWeights.Moe w = weights(rnd);
        int rows = 7;
        float[] n = inputs(rnd, rows);
        for (KernelMode mode : KernelMode.values()) {
            ForwardTrace trace = new ForwardTrace();
            float[] one = run(w, n, rows, mode, 1, trace);
            assertThat(run(w, n, rows, mode, 3, null)).as("%s 1 vs 3 threads", mode).containsExactly(one);
            float[] idx = trace.get("topk_indices");
            assertThat(new java.util.HashSet<>(Arrays.asList(box(idx))).size()).as("rows share and split experts")
                    .isGreaterThan(K);
            for (int r = 0; r < rows; r++) {
                float[] alone = run(w, Arrays.copyOfRange(n, r * H, (r + 1) * H), 1, mode, 2, null);
                assertThat(alone).as("%s row %d alone", mode, r).containsExactly(Arrays.copyOfRange(one, r * H,
                        (r + 1) * H));
            }
        }
    }

    private static Float[] box(float[] v) {
        Float[] out = new Float[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = v[i];
        }
        return out;
    }
}
