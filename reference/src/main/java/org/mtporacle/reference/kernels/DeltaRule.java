package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * One token of the gated delta rule for value heads {@code [from, to)} (spec §13.2): with {@code α = e^g},
 * {@code S ← αS; m = Sᵀk̂; δ = β(v − m); S ← S + k̂δᵀ; out = Sᵀq̂}, decay first and the read-out from the updated
 * state. Value head {@code h} reads key head {@code h / (Hv/Hk)} (grouped). {@code S_h} is {@code [Dk, Dv]} at
 * {@code h·Dk·Dv}, row-major ({@code S[i][j]}: key dim {@code i}, value dim {@code j}); q {@code [Hk, Dk]} normalised
 * and scaled, k {@code [Hk, Dk]} normalised, v and out {@code [Hv, Dv]}, g and β {@code [Hv]}. The state is read from
 * {@code state} and the updated one written to {@code next}: the same region (in place) or disjoint ones, the same
 * bits either way (each element is read from {@code state} once, before anything is written to it).
 *
 * <p>Order, per value dim {@code j} (columns are independent): {@code α} is {@link StrictMath#exp} of {@code g}
 * rounded to f32; for {@code i} ascending {@code S[i][j] = α·S[i][j]}, {@code m = fma(S[i][j], k_i, m)} from 0;
 * {@code δ = β·(v_j − m)}; for {@code i} ascending {@code S[i][j] = fma(k_i, δ, S[i][j])}, {@code o = fma(S[i][j],
 * q_i, o)} from 0. The vector form runs these very operations on {@code L} columns at once (four vectors at a time,
 * then one, then the scalar tail), so the modes agree bit for bit; it allocates nothing.
 */
final class DeltaRule {
    private DeltaRule() {
    }

    static void scalar(float[] out, int outOff, float[] next, int nextOff, float[] state, int stateOff, float[] q,
                       int qOff, float[] k, int kOff, float[] v, int vOff, float[] g, int gOff, float[] beta,
                       int betaOff, int hk, int hv, int dk, int dv, int from, int to) {
        for (int h = from; h < to; h++) {
            int kh = h / (hv / hk);
            float alpha = (float) StrictMath.exp(g[gOff + h]);
            columns(out, outOff + h * dv, next, nextOff + h * dk * dv, state, stateOff + h * dk * dv, q,
                    qOff + kh * dk, k, kOff + kh * dk, v, vOff + h * dv, alpha, beta[betaOff + h], dk, dv, 0);
        }
    }

    static void vector(float[] out, int outOff, float[] next, int nextOff, float[] state, int stateOff, float[] q,
                       int qOff, float[] k, int kOff, float[] v, int vOff, float[] g, int gOff, float[] beta,
                       int betaOff, int hk, int hv, int dk, int dv, int from, int to) {
        for (int h = from; h < to; h++) {
            int kh = h / (hv / hk);
            float alpha = (float) StrictMath.exp(g[gOff + h]);
            float b = beta[betaOff + h];
            int ob = outOff + h * dv;
            int nb = nextOff + h * dk * dv;
            int sb = stateOff + h * dk * dv;
            int qb = qOff + kh * dk;
            int kb = kOff + kh * dk;
            int vb = vOff + h * dv;
            int j = 0;
            for (; j + 4 * L <= dv; j += 4 * L) {
                block4(out, ob + j, next, nb + j, state, sb + j, q, qb, k, kb, v, vb + j, alpha, b, dk, dv);
            }
            for (; j + L <= dv; j += L) {
                block1(out, ob + j, next, nb + j, state, sb + j, q, qb, k, kb, v, vb + j, alpha, b, dk, dv);
            }
            columns(out, ob, next, nb, state, sb, q, qb, k, kb, v, vb, alpha, b, dk, dv, j);
        }
    }

    /** The definition for one head's value dims {@code [from, Dv)}. */
    private static void columns(float[] out, int ob, float[] next, int nb, float[] state, int sb, float[] q, int qb,
                                float[] k, int kb, float[] v, int vb, float alpha, float beta, int dk, int dv,
                                int from) {
        for (int j = from; j < dv; j++) {
            float m = 0f;
            for (int i = 0, s = sb + j, n = nb + j; i < dk; i++, s += dv, n += dv) {
                next[n] = alpha * state[s];
                m = Math.fma(next[n], k[kb + i], m);
            }
            float delta = beta * (v[vb + j] - m);
            float o = 0f;
            for (int i = 0, n = nb + j; i < dk; i++, n += dv) {
                next[n] = Math.fma(k[kb + i], delta, next[n]);
                o = Math.fma(next[n], q[qb + i], o);
            }
            out[ob + j] = o;
        }
    }

    /** Value dims {@code [j, j + L)}: {@code ob}, {@code nb}, {@code sb}, {@code vb} already point at column {@code j}. */
    private static void block1(float[] out, int ob, float[] next, int nb, float[] state, int sb, float[] q, int qb,
                               float[] k, int kb, float[] v, int vb, float alpha, float beta, int dk, int dv) {
        FloatVector m = FloatVector.zero(F);
        for (int i = 0, s = sb, n = nb; i < dk; i++, s += dv, n += dv) {
            FloatVector st = FloatVector.fromArray(F, state, s).mul(alpha);
            st.intoArray(next, n);
            m = st.fma(FloatVector.broadcast(F, k[kb + i]), m);
        }
        FloatVector delta = FloatVector.fromArray(F, v, vb).sub(m).mul(beta);
        FloatVector o = FloatVector.zero(F);
        for (int i = 0, n = nb; i < dk; i++, n += dv) {
            FloatVector st = delta.fma(FloatVector.broadcast(F, k[kb + i]), FloatVector.fromArray(F, next, n));
            st.intoArray(next, n);
            o = st.fma(FloatVector.broadcast(F, q[qb + i]), o);
        }
        o.intoArray(out, ob);
    }

    /** Value dims {@code [j, j + 4L)}, four independent column blocks in registers. */
    private static void block4(float[] out, int ob, float[] next, int nb, float[] state, int sb, float[] q, int qb,
                               float[] k, int kb, float[] v, int vb, float alpha, float beta, int dk, int dv) {
        FloatVector m0 = FloatVector.zero(F), m1 = m0, m2 = m0, m3 = m0;
        for (int i = 0, s = sb, n = nb; i < dk; i++, s += dv, n += dv) {
            FloatVector s0 = FloatVector.fromArray(F, state, s).mul(alpha);
            FloatVector s1 = FloatVector.fromArray(F, state, s + L).mul(alpha);
            FloatVector s2 = FloatVector.fromArray(F, state, s + 2 * L).mul(alpha);
            FloatVector s3 = FloatVector.fromArray(F, state, s + 3 * L).mul(alpha);
            s0.intoArray(next, n);
            s1.intoArray(next, n + L);
            s2.intoArray(next, n + 2 * L);
            s3.intoArray(next, n + 3 * L);
            FloatVector ki = FloatVector.broadcast(F, k[kb + i]);
            m0 = s0.fma(ki, m0);
            m1 = s1.fma(ki, m1);
            m2 = s2.fma(ki, m2);
            m3 = s3.fma(ki, m3);
        }
        FloatVector d0 = FloatVector.fromArray(F, v, vb).sub(m0).mul(beta);
        FloatVector d1 = FloatVector.fromArray(F, v, vb + L).sub(m1).mul(beta);
        FloatVector d2 = FloatVector.fromArray(F, v, vb + 2 * L).sub(m2).mul(beta);
        FloatVector d3 = FloatVector.fromArray(F, v, vb + 3 * L).sub(m3).mul(beta);
        FloatVector o0 = FloatVector.zero(F), o1 = o0, o2 = o0, o3 = o0;
        for (int i = 0, n = nb; i < dk; i++, n += dv) {
            FloatVector ki = FloatVector.broadcast(F, k[kb + i]);
            FloatVector s0 = d0.fma(ki, FloatVector.fromArray(F, next, n));
            FloatVector s1 = d1.fma(ki, FloatVector.fromArray(F, next, n + L));
            FloatVector s2 = d2.fma(ki, FloatVector.fromArray(F, next, n + 2 * L));
            FloatVector s3 = d3.fma(ki, FloatVector.fromArray(F, next, n + 3 * L));
            s0.intoArray(next, n);
            s1.intoArray(next, n + L);
            s2.intoArray(next, n + 2 * L);
            s3.intoArray(next, n + 3 * L);
            FloatVector qi = FloatVector.broadcast(F, q[qb + i]);
            o0 = s0.fma(qi, o0);
            o1 = s1.fma(qi, o1);
            o2 = s2.fma(qi, o2);
            o3 = s3.fma(qi, o3);
        }
        o0.intoArray(out, ob);
        o1.intoArray(out, ob + L);
        o2.intoArray(out, ob + 2 * L);
        o3.intoArray(out, ob + 3 * L);
    }
}
