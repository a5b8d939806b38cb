package org.mtporacle.reference;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;

import java.util.ArrayList;
import java.util.List;

/**
 * An independent float64 scalar implementation of one row of the MTP block (spec §1.4–§1.5), written from the spec
 * for tests: one position at a time, its own KV list, dense weights only. Slow and obvious on purpose.
 */
public final class F64Block {
    private final MtpConfig c;
    private final MtpWeights w;
    /** Per position: keys and values {@code [nKV·D]} (keys after k_norm and RoPE). */
    public final List<double[]> keys = new ArrayList<>();
    public final List<double[]> values = new ArrayList<>();

    public F64Block(MtpModel model) {
        this.c = model.config();
        this.w = model.weights();
    }

    /** A block holding a copy of this one's KV. */
    public F64Block fork(MtpModel model) {
        F64Block f = new F64Block(model);
        f.keys.addAll(keys);
        f.values.addAll(values);
        return f;
    }

    public int length() {
        return keys.size();
    }

    /** Truncates the KV to {@code n} positions. */
    public void truncate(int n) {
        while (keys.size() > n) {
            keys.removeLast();
            values.removeLast();
        }
    }

    /** Appends one position built from {@code (e, hin)} at RoPE position {@link #length()}; returns Y {@code [H]}. */
    public double[] forward(double[] e, double[] hin) {
        int h = c.hiddenSize();
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        double[] u = concat(rms(e, w.preFcNormEmbedding()), rms(hin, w.preFcNormHidden()));
        double[] x = matvec(w.fc(), u);
        double[] a = rms(x, w.inputNorm());
        double[] qg = matvec(w.qProj(), a);
        double[] k = matvec(w.kProj(), a);
        double[] v = matvec(w.vProj(), a);
        int pos = keys.size();
        double[] q = new double[nH * d];
        double[] gate = new double[nH * d];
        for (int j = 0; j < nH; j++) {
            double[] qh = rms(slice(qg, j * 2 * d, d), w.qNorm());
            System.arraycopy(rope(qh, pos), 0, q, j * d, d);
            System.arraycopy(qg, j * 2 * d + d, gate, j * d, d);
        }
        double[] kr = new double[nKv * d];
        for (int g = 0; g < nKv; g++) {
            System.arraycopy(rope(rms(slice(k, g * d, d), w.kNorm()), pos), 0, kr, g * d, d);
        }
        keys.add(kr);
        values.add(v);
        double[] o = new double[nH * d];
        for (int j = 0; j < nH; j++) {
            int g = j / (nH / nKv);
            double[] s = new double[keys.size()];
            double max = Double.NEGATIVE_INFINITY;
            for (int p = 0; p < s.length; p++) {
                double dot = 0;
                for (int i = 0; i < d; i++) {
                    dot += q[j * d + i] * keys.get(p)[g * d + i];
                }
                s[p] = dot / Math.sqrt(d);
                max = Math.max(max, s[p]);
            }
            double sum = 0;
            for (int p = 0; p < s.length; p++) {
                s[p] = Math.exp(s[p] - max);
                sum += s[p];
            }
            for (int p = 0; p < s.length; p++) {
                for (int i = 0; i < d; i++) {
                    o[j * d + i] += s[p] / sum * values.get(p)[g * d + i];
                }
            }
        }
        for (int i = 0; i < o.length; i++) {
            o[i] *= sigmoid(gate[i]);
        }
        double[] r = matvec(w.oProj(), o);
        double[] h1 = new double[h];
        for (int i = 0; i < h; i++) {
            h1[i] = x[i] + r[i];
        }
        double[] n = rms(h1, w.postAttentionNorm());
        double[] gt = matvec(w.gateProj(), n);
        double[] up = matvec(w.upProj(), n);
        for (int i = 0; i < gt.length; i++) {
            gt[i] = gt[i] * sigmoid(gt[i]) * up[i];
        }
        double[] m = matvec(w.downProj(), gt);
        double[] y = new double[h];
        for (int i = 0; i < h; i++) {
            y[i] = h1[i] + m[i];
        }
        return rms(y, w.finalNorm());
    }

    /** Row {@code token} of the embedding table. */
    public double[] embed(int token) {
        HostTensor t = ((LinearWeight.Dense) w.embedding()).weight();
        double[] out = new double[t.dim(1)];
        for (int i = 0; i < out.length; i++) {
            out[i] = t.getDouble((long) token * out.length + i);
        }
        return out;
    }

    /** {@code logits − logsumexp(logits)} of {@code y · headᵀ}. */
    public double[] logProbs(double[] y) {
        double[] logits = matvec(w.head(), y);
        double max = Double.NEGATIVE_INFINITY;
        for (double l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (double l : logits) {
            sum += Math.exp(l - max);
        }
        double lse = max + Math.log(sum);
        for (int i = 0; i < logits.length; i++) {
            logits[i] -= lse;
        }
        return logits;
    }

    /** Lowest index of the maximum. */
    public static int argmax(double[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    private double[] rope(double[] x, int pos) {
        int r = c.rotaryDims();
        double[] out = x.clone();
        for (int f = 0; f < r / 2; f++) {
            double phi = pos * Math.pow(c.ropeTheta(), -2.0 * f / r);
            out[f] = x[f] * Math.cos(phi) - x[f + r / 2] * Math.sin(phi);
            out[f + r / 2] = x[f] * Math.sin(phi) + x[f + r / 2] * Math.cos(phi);
        }
        return out;
    }

    private double[] rms(double[] x, float[] gain) {
        double ss = 0;
        for (double v : x) {
            ss += v * v;
        }
        double inv = 1 / Math.sqrt(ss / x.length + c.rmsNormEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * inv * gain[i];
        }
        return out;
    }

    static double[] matvec(LinearWeight lw, double[] x) {
        HostTensor t = ((LinearWeight.Dense) lw).weight();
        int out = t.dim(0);
        int in = t.dim(1);
        double[] y = new double[out];
        for (int o = 0; o < out; o++) {
            double acc = 0;
            for (int i = 0; i < in; i++) {
                acc += t.getDouble((long) o * in + i) * x[i];
            }
            y[o] = acc;
        }
        return y;
    }

    private static double sigmoid(double z) {
        return 1 / (1 + Math.exp(-z));
    }

    private static double[] concat(double[] a, double[] b) {
        double[] out = new double[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static double[] slice(double[] a, int from, int n) {
        double[] out = new double[n];
        System.arraycopy(a, from, out, 0, n);
        return out;
    }

    /** NMSE {@code Σ(a−b)²/Σb²} of {@code actual} against {@code expected}. */
    public static double nmse(float[] actual, double[] expected) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < expected.length; i++) {
            double diff = actual[i] - expected[i];
            num += diff * diff;
            den += expected[i] * expected[i];
        }
        return den == 0 ? num : num / den;
    }
}
