package org.mtporacle.reference.target;

import java.util.ArrayList;
import java.util.List;

import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetWeights;

/**
 * A slow float64 definition of the dense hybrid target, one row, token by token (spec §13.1–13.2), written from the
 * spec's formulas in plain loops and sharing no code with the reference: the control that checks the reference on
 * shapes the external reference does not have (Hv/Hk of 3, Dk ≠ Dv, other K, untied heads, other layer patterns).
 */
final class F64Target {
    private final TargetConfig c;
    private final List<Layer> layers = new ArrayList<>();
    private final double[][] embedding;
    private final double[][] head;
    private final double[] finalNorm;
    // the row's state
    private final List<double[][]> window = new ArrayList<>();  // per GDN layer [C][K−1]
    private final List<double[][][]> state = new ArrayList<>(); // per GDN layer [Hv][Dk][Dv]
    private final List<List<double[][]>> keys = new ArrayList<>(); // per full layer, per position [nKV][D]
    private final List<List<double[][]>> values = new ArrayList<>();
    private int position;

    /** One layer's weights in f64. */
    private record Layer(boolean gdn, double[] inNorm, double[] postNorm, double[][] gate, double[][] up,
                         double[][] down, double[][] qkv, double[][] z, double[][] b, double[][] a, double[][] conv,
                         double[] aLog, double[] dtBias, double[] norm, double[][] out, double[][] q, double[][] k,
                         double[][] v, double[][] o, double[] qNorm, double[] kNorm) {
    }

    F64Target(TargetConfig config, TargetWeights w) {
        this.c = config;
        this.embedding = matrix(w.embedding());
        this.head = matrix(w.head());
        this.finalNorm = vector(w.finalNorm());
        TargetConfig.Gdn g = c.gdn();
        for (TargetWeights.Layer l : w.layers()) {
            MlpWeights.Dense mlp = (MlpWeights.Dense) l.mlp();
            double[][] gate = matrix(mlp.gateProj());
            double[][] up = matrix(mlp.upProj());
            double[][] down = matrix(mlp.downProj());
            if (l.mixer() instanceof TargetWeights.Gdn m) {
                double[][] conv = new double[g.convDim()][g.convKernel()];
                for (int ch = 0; ch < g.convDim(); ch++) {
                    for (int j = 0; j < g.convKernel(); j++) {
                        conv[ch][j] = m.conv()[ch * g.convKernel() + j];
                    }
                }
                layers.add(new Layer(true, vector(l.inputNorm()), vector(l.postAttentionNorm()), gate, up, down,
                        matrix(m.inProjQkv()), matrix(m.inProjZ()), matrix(m.inProjB()), matrix(m.inProjA()), conv,
                        vector(m.aLog()), vector(m.dtBias()), vector(m.norm()), matrix(m.outProj()), null, null, null,
                        null, null, null));
                window.add(new double[g.convDim()][g.convKernel() - 1]);
                state.add(new double[g.numValueHeads()][g.keyHeadDim()][g.valueHeadDim()]);
            } else {
                TargetWeights.Attention at = (TargetWeights.Attention) l.mixer();
                layers.add(new Layer(false, vector(l.inputNorm()), vector(l.postAttentionNorm()), gate, up, down, null,
                        null, null, null, null, null, null, null, null, matrix(at.qProj()), matrix(at.kProj()),
                        matrix(at.vProj()), matrix(at.oProj()), vector(at.qNorm()), vector(at.kNorm())));
                keys.add(new ArrayList<>());
                values.add(new ArrayList<>());
            }
        }
    }

    /** What one token gives: the taps before and after the final norm, and the logits. */
    record Step(double[] pre, double[] post, double[] logits) {
    }

    Step feed(int token) {
        double[] x = embedding[token].clone();
        int gi = 0;
        int fi = 0;
        for (Layer l : layers) {
            double[] a = rms(x, l.inNorm(), c.shape().rmsNormEps());
            double[] mixed = l.gdn() ? gdn(l, a, gi++) : attention(l, a, fi++);
            double[] h = add(x, mixed);
            double[] n = rms(h, l.postNorm(), c.shape().rmsNormEps());
            double[] gate = mul(l.gate(), n);
            double[] up = mul(l.up(), n);
            double[] act = new double[gate.length];
            for (int i = 0; i < act.length; i++) {
                act[i] = silu(gate[i]) * up[i];
            }
            x = add(h, mul(l.down(), act));
        }
        position++;
        double[] post = rms(x, finalNorm, c.shape().rmsNormEps());
        return new Step(x, post, mul(head, post));
    }

    /** The conv window of GDN layer {@code slot}, channel-major {@code [C, K−1]}. */
    double[] window(int slot) {
        double[][] w = window.get(slot);
        double[] out = new double[w.length * w[0].length];
        for (int ch = 0; ch < w.length; ch++) {
            System.arraycopy(w[ch], 0, out, ch * w[0].length, w[0].length);
        }
        return out;
    }

    /** The recurrent state of GDN layer {@code slot}, {@code [Hv, Dk, Dv]}. */
    double[] state(int slot) {
        double[][][] s = state.get(slot);
        int dk = s[0].length;
        int dv = s[0][0].length;
        double[] out = new double[s.length * dk * dv];
        for (int h = 0; h < s.length; h++) {
            for (int i = 0; i < dk; i++) {
                System.arraycopy(s[h][i], 0, out, (h * dk + i) * dv, dv);
            }
        }
        return out;
    }

    private double[] gdn(Layer l, double[] a, int slot) {
        TargetConfig.Gdn g = c.gdn();
        int k = g.convKernel();
        double[] raw = mul(l.qkv(), a);
        double[][] win = window.get(slot);
        double[] conved = new double[raw.length];
        for (int ch = 0; ch < raw.length; ch++) {
            double sum = 0;
            for (int j = 0; j < k; j++) {
                double u = j < k - 1 ? win[ch][j] : raw[ch];
                sum += l.conv()[ch][j] * u;
            }
            conved[ch] = silu(sum);
            for (int j = 0; j + 1 < k - 1; j++) {
                win[ch][j] = win[ch][j + 1];
            }
            win[ch][k - 2] = raw[ch];
        }
        double[] z = mul(l.z(), a);
        double[] bl = mul(l.b(), a);
        double[] al = mul(l.a(), a);
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int kd = g.keyDim();
        double[] out = new double[g.valueDim()];
        double[][][] s = state.get(slot);
        for (int h = 0; h < g.numValueHeads(); h++) {
            int kh = h / g.groupRatio();
            double[] q = l2(conved, kh * dk, dk, 1 / Math.sqrt(dk));
            double[] kk = l2(conved, kd + kh * dk, dk, 1);
            double beta = 1 / (1 + Math.exp(-bl[h]));
            double sp = al[h] + l.dtBias()[h];
            sp = sp > 20 ? sp : Math.log1p(Math.exp(sp));
            double alpha = Math.exp(-Math.exp(l.aLog()[h]) * sp);
            double[] o = new double[dv];
            for (int j = 0; j < dv; j++) {
                double m = 0;
                for (int i = 0; i < dk; i++) {
                    s[h][i][j] *= alpha;
                    m += s[h][i][j] * kk[i];
                }
                double delta = beta * (conved[2 * kd + h * dv + j] - m);
                double r = 0;
                for (int i = 0; i < dk; i++) {
                    s[h][i][j] += kk[i] * delta;
                    r += s[h][i][j] * q[i];
                }
                o[j] = r;
            }
            double ms = 0;
            for (double v : o) {
                ms += v * v;
            }
            double inv = 1 / Math.sqrt(ms / dv + c.shape().rmsNormEps());
            for (int j = 0; j < dv; j++) {
                out[h * dv + j] = l.norm()[j] * o[j] * inv * silu(z[h * dv + j]);
            }
        }
        return mul(l.out(), out);
    }

    private double[] attention(Layer l, double[] a, int slot) {
        MtpConfig s = c.shape();
        int d = s.headDim();
        double[] qg = mul(l.q(), a);
        double[] kk = mul(l.k(), a);
        double[] vv = mul(l.v(), a);
        double[][] kh = new double[s.numKvHeads()][];
        double[][] vh = new double[s.numKvHeads()][];
        for (int g = 0; g < s.numKvHeads(); g++) {
            kh[g] = rope(rms(slice(kk, g * d, d), l.kNorm(), s.rmsNormEps()), position);
            vh[g] = slice(vv, g * d, d);
        }
        keys.get(slot).add(kh);
        values.get(slot).add(vh);
        double[] out = new double[s.numHeads() * d];
        for (int j = 0; j < s.numHeads(); j++) {
            double[] q = rope(rms(slice(qg, j * 2 * d, d), l.qNorm(), s.rmsNormEps()), position);
            double[] gate = slice(qg, j * 2 * d + d, d);
            int g = j / s.groupSize();
            int t = keys.get(slot).size();
            double[] score = new double[t];
            double max = Double.NEGATIVE_INFINITY;
            for (int p = 0; p < t; p++) {
                double dot = 0;
                for (int i = 0; i < d; i++) {
                    dot += q[i] * keys.get(slot).get(p)[g][i];
                }
                score[p] = dot / Math.sqrt(d);
                max = Math.max(max, score[p]);
            }
            double sum = 0;
            for (int p = 0; p < t; p++) {
                score[p] = Math.exp(score[p] - max);
                sum += score[p];
            }
            for (int i = 0; i < d; i++) {
                double o = 0;
                for (int p = 0; p < t; p++) {
                    o += score[p] / sum * values.get(slot).get(p)[g][i];
                }
                out[j * d + i] = o / (1 + Math.exp(-gate[i]));
            }
        }
        return mul(l.o(), out);
    }

    private double[] rope(double[] x, int pos) {
        int r = c.shape().rotaryDims();
        double[] y = x.clone();
        for (int f = 0; f < r / 2; f++) {
            double angle = pos * Math.pow(c.shape().ropeTheta(), -2.0 * f / r);
            y[f] = x[f] * Math.cos(angle) - x[f + r / 2] * Math.sin(angle);
            y[f + r / 2] = x[f + r / 2] * Math.cos(angle) + x[f] * Math.sin(angle);
        }
        return y;
    }

    private static double[] l2(double[] x, int off, int n, double scale) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            ss += x[off + i] * x[off + i];
        }
        double inv = scale / Math.sqrt(ss + 1e-6);
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            y[i] = x[off + i] * inv;
        }
        return y;
    }

    private static double[] rms(double[] x, double[] gain, double eps) {
        double ms = 0;
        for (double v : x) {
            ms += v * v;
        }
        double inv = 1 / Math.sqrt(ms / x.length + eps);
        double[] y = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * inv * gain[i];
        }
        return y;
    }

    private static double silu(double v) {
        return v / (1 + Math.exp(-v));
    }

    private static double[] slice(double[] x, int off, int n) {
        return java.util.Arrays.copyOfRange(x, off, off + n);
    }

    private static double[] add(double[] a, double[] b) {
        double[] y = new double[a.length];
        for (int i = 0; i < y.length; i++) {
            y[i] = a[i] + b[i];
        }
        return y;
    }

    private static double[] mul(double[][] w, double[] x) {
        double[] y = new double[w.length];
        for (int o = 0; o < w.length; o++) {
            double s = 0;
            for (int i = 0; i < x.length; i++) {
                s += w[o][i] * x[i];
            }
            y[o] = s;
        }
        return y;
    }

    private static double[] vector(float[] v) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            d[i] = v[i];
        }
        return d;
    }

    private static double[][] matrix(LinearWeight w) {
        float[] v = ((LinearWeight.Dense) w).weight().toFloatArray();
        int in = w.inFeatures();
        double[][] m = new double[w.outFeatures()][in];
        for (int o = 0; o < m.length; o++) {
            for (int i = 0; i < in; i++) {
                m[o][i] = v[o * in + i];
            }
        }
        return m;
    }
}
