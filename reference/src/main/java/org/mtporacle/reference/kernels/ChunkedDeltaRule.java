package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.L;

import java.util.Arrays;

/**
 * The gated delta rule over {@code T} tokens in chunks of {@link #CHUNK}, the form of transformers'
 * {@code torch_chunk_gated_delta_rule} (spec §13.2), for value heads {@code [from, to)}: q, k {@code [T, Hk, Dk]}
 * (normalised, q scaled), v and out {@code [T, Hv, Dv]}, g and β {@code [T, Hv]}, states as {@link DeltaRule}.
 * Mathematically {@code T} steps of {@link DeltaRule}; it differs from them by f32 reassociation only.
 *
 * <p>Per chunk of {@code n ≤ 64} tokens and value head, in f32 as transformers writes it: {@code c} the running sum
 * of {@code g} from the chunk's start ({@code t} ascending); {@code Γ[i,j] = e^(c_i − c_j)}, {@code j ≤ i};
 * {@code A[i,j] = −((β_i k_i)·k_j)·Γ[i,j]}, {@code j < i}; rows {@code i = 1 … n−1} in turn {@code A[i,:i] += A[i,:i]
 * · A[:i,:i]} (forward substitution) and {@code T = A + I}; {@code U = T·(βv)}, {@code W = T·(βk·e^c)}; {@code V' =
 * U − W·S}; {@code out_i = (q_i·e^(c_i))·S + Σ_{j≤i} ((q_i·k_j)·Γ[i,j]) V'_j}; {@code S ← S·e^(c_last) + Σ_j
 * (k_j·e^(c_last − c_j)) ⊗ V'_j}. A last chunk shorter than 64 is not padded (transformers' zero padding adds exact
 * zeros). Exponentials are {@link StrictMath#exp} in f64 rounded to f32; every product is {@link VecMat} in the
 * mode's form, whose forms agree bit for bit, so the modes do too.
 */
final class ChunkedDeltaRule {
    /** Tokens per chunk, transformers' {@code chunk_size}. */
    static final int CHUNK = 64;
    private static final int CH = CHUNK;

    private ChunkedDeltaRule() {
    }

    static void scalar(float[] out, int outOff, float[] state, int stateOff, float[] q, int qOff, float[] k, int kOff,
                       float[] v, int vOff, float[] g, int gOff, float[] beta, int betaOff, int tokens, int hk, int hv,
                       int dk, int dv, int from, int to) {
        new Pass(false, out, outOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta, betaOff, tokens, hk,
                hv, dk, dv).heads(from, to);
    }

    static void vector(float[] out, int outOff, float[] state, int stateOff, float[] q, int qOff, float[] k, int kOff,
                       float[] v, int vOff, float[] g, int gOff, float[] beta, int betaOff, int tokens, int hk, int hv,
                       int dk, int dv, int from, int to) {
        new Pass(true, out, outOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta, betaOff, tokens, hk,
                hv, dk, dv).heads(from, to);
    }

    /** One call's operands and its scratch (owned by one thread); the current head {@code h} and chunk {@code c0}. */
    private static final class Pass {
        private final boolean vector;
        private final float[] out, state, q, k, v, g, beta;
        private final int outOff, stateOff, qOff, kOff, vOff, gOff, betaOff, tokens, hk, hv, dk, dv;
        private final float[] cum = new float[CH], ecum = new float[CH];   // [n] c_t, e^(c_t)
        private final double[] exps = new double[CH];                      // [n] exponents, then their e^x
        private final float[] decay = new float[CH * CH];                  // [n, CH] Γ, lower triangle
        private final float[] a = new float[CH * CH];                      // [n, CH] A, then T
        private final float[] qk = new float[CH * CH];                     // [n, CH] (q_i·k_j)·Γ
        private final float[] kT;                                          // [Dk, CH] k of the chunk, transposed
        private final float[] kbe, w;                                      // [n, Dk] βk·e^c, W
        private final float[] vb, u;                                       // [n, Dv] βv then V', U
        private final float[] rowsOut, qe;                                 // [n, Dv] W·S then (q·e^c)·S, [n, Dk]
        private final float[] kDecay, stateAdd;                            // [Dk, CH] k·e^(c_last − c), [Dk, Dv]
        private final float[] row, tmp;                                    // [max(CH, Dk)], [max(CH, Dv)]
        private int h, kh, c0, n, sb;

        Pass(boolean vector, float[] out, int outOff, float[] state, int stateOff, float[] q, int qOff, float[] k,
             int kOff, float[] v, int vOff, float[] g, int gOff, float[] beta, int betaOff, int tokens, int hk, int hv,
             int dk, int dv) {
            this.vector = vector;
            this.out = out; this.outOff = outOff; this.state = state; this.stateOff = stateOff;
            this.q = q; this.qOff = qOff; this.k = k; this.kOff = kOff; this.v = v; this.vOff = vOff;
            this.g = g; this.gOff = gOff; this.beta = beta; this.betaOff = betaOff;
            this.tokens = tokens; this.hk = hk; this.hv = hv; this.dk = dk; this.dv = dv;
            kT = new float[dk * CH];
            kbe = new float[CH * dk];
            w = new float[CH * dk];
            vb = new float[CH * dv];
            u = new float[CH * dv];
            rowsOut = new float[CH * dv];
            qe = new float[CH * dk];
            kDecay = new float[dk * CH];
            stateAdd = new float[dk * dv];
            row = new float[Math.max(CH, dk)];
            tmp = new float[Math.max(CH, dv)];
        }

        void heads(int from, int to) {
            for (h = from; h < to; h++) {
                kh = h / (hv / hk);
                sb = stateOff + h * dk * dv;
                for (c0 = 0; c0 < tokens; c0 += CH) {
                    n = Math.min(CH, tokens - c0);
                    decays();
                    inputs();
                    triangle();
                    solve();
                    outputs();
                    advance();
                }
            }
        }

        /** {@code c}, {@code e^c} and {@code Γ}; each exponent the f32 value widened, {@link StrictExp}'s bits. */
        private void decays() {
            float c = 0f;
            for (int t = 0; t < n; t++) {
                c += g[gOff + (c0 + t) * hv + h];
                cum[t] = c;
                exps[t] = c;
            }
            exp(exps, n);
            for (int t = 0; t < n; t++) {
                ecum[t] = (float) exps[t];
            }
            for (int i = 0; i < n; i++) {
                for (int j = 0; j <= i; j++) {
                    exps[j] = cum[i] - cum[j];
                }
                exp(exps, i + 1);
                for (int j = 0; j <= i; j++) {
                    decay[i * CH + j] = (float) exps[j];
                }
            }
        }

        /** {@code x[0, len) = e^x} in place, as {@link StrictMath#exp} in either mode. */
        private void exp(double[] x, int len) {
            if (vector) {
                StrictExp.vector(x, 0, x, 0, len);
            } else {
                StrictExp.scalar(x, 0, x, 0, len);
            }
        }

        /**
         * How many columns a product of {@code cols} columns computes: in the vector form rounded up to whole vectors
         * (each column's value does not depend on how many are computed, and the extra ones are never read), so no
         * row of the triangles falls to the scalar tail.
         */
        private int width(int cols) {
            return vector ? Math.min(CH, (cols + L - 1) / L * L) : cols;
        }

        /** {@code kT}, {@code βk·e^c} and {@code βv} of the chunk. */
        private void inputs() {
            for (int t = 0; t < n; t++) {
                int kt = kAt(t);
                int vt = vOff + (c0 + t) * hv * dv + h * dv;
                float b = beta[betaOff + (c0 + t) * hv + h];
                for (int d = 0; d < dk; d++) {
                    kT[d * CH + t] = k[kt + d];
                    kbe[t * dk + d] = b * k[kt + d] * ecum[t];
                }
                for (int j = 0; j < dv; j++) {
                    vb[t * dv + j] = b * v[vt + j];
                }
            }
        }

        /** {@code A[i,j] = −((β_i k_i)·k_j)·Γ[i,j]} below the diagonal, 0 on and above it. */
        private void triangle() {
            for (int i = 0; i < n; i++) {
                float b = beta[betaOff + (c0 + i) * hv + h];
                for (int d = 0; d < dk; d++) {
                    row[d] = b * k[kAt(i) + d];
                }
                product(a, i * CH, row, 0, kT, 0, CH, dk, width(i));
                for (int j = 0; j < i; j++) {
                    a[i * CH + j] = -(a[i * CH + j] * decay[i * CH + j]);
                }
                Arrays.fill(a, i * CH + i, i * CH + n, 0f);
            }
        }

        /** Forward substitution, row by row, then {@code T = A + I}; {@code U = T·βv}, {@code W = T·βk·e^c}. */
        private void solve() {
            for (int i = 1; i < n; i++) {
                System.arraycopy(a, i * CH, row, 0, i);
                product(tmp, 0, row, 0, a, 0, CH, i, i);
                for (int j = 0; j < i; j++) {
                    a[i * CH + j] = row[j] + tmp[j];
                }
            }
            for (int i = 0; i < n; i++) {
                a[i * CH + i] = 1f;
            }
            for (int i = 0; i < n; i++) {
                product(u, i * dv, a, i * CH, vb, 0, dv, i + 1, dv);
                product(w, i * dk, a, i * CH, kbe, 0, dk, i + 1, dk);
            }
        }

        /**
         * {@code V' = U − W·S} (into {@code vb}), then each token's output from the state before the chunk; the
         * products with the state take the chunk's rows together ({@link VecMat#vectorRows}: the same bits per row).
         */
        private void outputs() {
            productRows(rowsOut, dv, w, dk, state, sb, dv, n, dk, dv);
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < dv; j++) {
                    vb[i * dv + j] = u[i * dv + j] - rowsOut[i * dv + j];
                }
            }
            for (int i = 0; i < n; i++) {
                int qi = qOff + (c0 + i) * hk * dk + kh * dk;
                for (int d = 0; d < dk; d++) {
                    qe[i * dk + d] = q[qi + d] * ecum[i];
                }
            }
            productRows(rowsOut, dv, qe, dk, state, sb, dv, n, dk, dv);
            for (int i = 0; i < n; i++) {
                int qi = qOff + (c0 + i) * hk * dk + kh * dk;
                product(qk, i * CH, q, qi, kT, 0, CH, dk, width(i + 1));
                for (int j = 0; j <= i; j++) {
                    qk[i * CH + j] = qk[i * CH + j] * decay[i * CH + j];
                }
                product(tmp, 0, qk, i * CH, vb, 0, dv, i + 1, dv);
                int oi = outOff + (c0 + i) * hv * dv + h * dv;
                for (int j = 0; j < dv; j++) {
                    out[oi + j] = rowsOut[i * dv + j] + tmp[j];
                }
            }
        }

        /** {@code S ← S·e^(c_last) + Σ_j (k_j·e^(c_last − c_j)) ⊗ V'_j}; {@code e^(c_last − c_j)} is Γ's last row. */
        private void advance() {
            float last = ecum[n - 1];
            int dte = (n - 1) * CH;
            for (int d = 0; d < dk; d++) {
                for (int j = 0; j < n; j++) {
                    kDecay[d * CH + j] = kT[d * CH + j] * decay[dte + j];
                }
            }
            productRows(stateAdd, dv, kDecay, CH, vb, 0, dv, dk, n, dv);
            for (int d = 0; d < dk; d++) {
                int s = sb + d * dv;
                for (int j = 0; j < dv; j++) {
                    state[s + j] = state[s + j] * last + stateAdd[d * dv + j];
                }
            }
        }

        private int kAt(int t) {
            return kOff + (c0 + t) * hk * dk + kh * dk;
        }

        /** {@code rows} rows {@code c_r = x_r · B}, {@code c} and {@code x} from 0, rows {@code cStride}, {@code xStride} apart. */
        private void productRows(float[] c, int cStride, float[] x, int xStride, float[] b, int bOff, int bStride,
                                 int rows, int terms, int cols) {
            if (vector) {
                VecMat.vectorRows(c, 0, cStride, x, 0, xStride, b, bOff, bStride, rows, terms, cols);
            } else {
                VecMat.scalarRows(c, 0, cStride, x, 0, xStride, b, bOff, bStride, rows, terms, cols);
            }
        }

        private void product(float[] c, int cOff, float[] x, int xOff, float[] b, int bOff, int bStride, int terms,
                             int cols) {
            if (vector) {
                VecMat.vector(c, cOff, x, xOff, b, bOff, bStride, terms, cols);
            } else {
                VecMat.scalar(c, cOff, x, xOff, b, bOff, bStride, terms, cols);
            }
        }
    }
}
