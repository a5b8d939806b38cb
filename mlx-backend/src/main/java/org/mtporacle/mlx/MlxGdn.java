package org.mtporacle.mlx;

import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCompiled;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.ArrayList;
import java.util.List;

/**
 * A Gated DeltaNet decoder layer on MLX (spec §13.2): {@code h = x + GDN(RMSNorm(x)); y = h + MLP(RMSNorm(h))}, for
 * {@code B} rows of {@code S} tokens in one graph. The residual stream {@code x, h, y} and its norms are f32; the
 * products run in the compute dtype ({@code q|k|v}, {@code z},
 * {@code b} and {@code a} as one product); the conv, gates, norms and the recurrence in f32:
 * <ol>
 *   <li>{@code u = [window | qkv]} per row ({@code [B, K−1+S, C]}); {@code conv[t] = silu(Σ_j W[:, j] · u[t + j])};</li>
 *   <li>{@code q̂ = l2norm(q)·Dk^-½}, {@code k̂ = l2norm(k)}, ε inside the root, as MLX's rms_norm over {@code Dk}
 *   with ε/Dk and the gain {@code scale/√Dk} ({@code x/√(Σx²+ε) = x/√(Dk·(mean x² + ε/Dk))});</li>
 *   <li>{@code β = σ(b)}, {@code g = −exp(A_log)·softplus(a + dt_bias)} (torch's threshold 20), {@code α = e^g};</li>
 *   <li>per token, value head {@code h} reading key head {@code h/(Hv/Hk)}: {@code S ← αS; m = k̂ᵀS;
 *   S ← S + k̂(β(v − m))ᵀ; o = q̂ᵀS} — decay first, read-out from the updated state;</li>
 *   <li>the gated norm per value head (plain gain) {@code rms(o)·w ⊙ silu(z)}, then {@code out_proj}.</li>
 * </ol>
 * The row state stays on the device: the conv window {@code [B, K−1, C]} (time-major, compute dtype) and the recurrent
 * state {@code [B, Hv, Dk, Dv]} f32. With {@code compile} the layer (dense MLP only) runs through {@code mlx_compile},
 * one trace per width {@code S}. With a {@link MlxGdnKernel} (CUDA GPU streams only) step 4 is one kernel launch over
 * all tokens instead of the per-token ops.
 */
final class MlxGdn implements AutoCloseable {
    /** transformers' {@code l2norm} ε. */
    static final float L2_EPS = 1e-6f;
    /** torch's softplus threshold: above it softplus(x) is x. */
    static final float SOFTPLUS_THRESHOLD = 20f;

    private final TargetConfig.Gdn g;
    private final int hidden;
    private final int dtype;
    private final float eps;
    private final MlxArray inNorm, postNorm;  // [H] full gains, f32 (the residual stream is f32)
    private final MlxStack proj;             // qkv [C], z [Hv·Dv], b [Hv], a [Hv]
    private final MlxArray[] taps;           // K × [C] f32: column j of the conv weight
    private final MlxArray negA, dtBias;     // [Hv] f32: −exp(A_log), dt_bias
    private final MlxArray norm;             // [Dv] f32 plain gain
    private final MlxArray qGain, kGain;     // [Dk] f32: Dk^-1 and Dk^-½ (see class Javadoc, step 2)
    private final MlxArray threshold;        // [1] f32 SOFTPLUS_THRESHOLD
    private final MlxArray group;            // [Hv] int32 key head of each value head, null when Hv = Hk
    private final MlxLinear out;
    private final MlxTargetMlp mlp;
    private final boolean compile;
    private final MlxGdnKernel kernel;       // the fused recurrence (CUDA), or null: the per-token ops
    private MlxCompiled compiledEvery, compiledLast;

    /** What one forward leaves: the output, the conv inputs {@code u}, and the states after the last or every token. */
    record Out(MlxArray y, MlxArray inputs, MlxArray last, MlxArray every) {
        static Out of(List<MlxArray> l, boolean every) {
            return new Out(l.get(0), l.get(1), l.get(2), every ? l.get(3) : null);
        }
    }

    MlxGdn(TargetConfig c, MlxArray inNorm, MlxArray postNorm, MlxStack proj, MlxArray[] taps, MlxArray negA,
           MlxArray dtBias, MlxArray norm, MlxArray qGain, MlxArray kGain, MlxArray group, MlxLinear out,
           MlxTargetMlp mlp, MlxArray threshold, int dtype, boolean compile, MlxGdnKernel kernel) {
        this.g = c.gdn();
        this.hidden = c.shape().hiddenSize();
        this.eps = (float) c.shape().rmsNormEps();
        this.inNorm = inNorm;
        this.postNorm = postNorm;
        this.proj = proj;
        this.taps = taps;
        this.negA = negA;
        this.dtBias = dtBias;
        this.norm = norm;
        this.qGain = qGain;
        this.kGain = kGain;
        this.group = group;
        this.threshold = threshold;
        this.out = out;
        this.mlp = mlp;
        this.dtype = dtype;
        this.compile = compile;
        this.kernel = kernel;
    }

    /** Uploads layer {@code w} (a GDN layer); its arrays are tracked in {@code made} until the layer owns them. */
    static MlxGdn upload(MlxOps ops, TargetConfig c, TargetWeights.Layer w, int dtype, boolean cpu, MlxMoe.Path path,
                         boolean compile, MlxGdnKernel kernel, List<AutoCloseable> made) {
        TargetConfig.Gdn g = c.gdn();
        TargetWeights.Gdn m = (TargetWeights.Gdn) w.mixer();
        MlxArray inNorm = keep(ops, made, ops.fromFloats(w.inputNorm(), w.inputNorm().length), MlxC.MLX_FLOAT32);
        MlxArray postNorm = keep(ops, made, ops.fromFloats(w.postAttentionNorm(), w.postAttentionNorm().length),
                MlxC.MLX_FLOAT32);
        MlxStack proj = MlxStack.upload(ops, List.of(m.inProjQkv(), m.inProjZ(), m.inProjB(), m.inProjA()), dtype,
                cpu);
        made.add(proj);
        int ch = g.convDim();
        int k = g.convKernel();
        MlxArray[] taps = new MlxArray[k];
        for (int j = 0; j < k; j++) {
            float[] col = new float[ch];
            for (int i = 0; i < ch; i++) {
                col[i] = m.conv()[i * k + j];
            }
            taps[j] = keep(ops, made, ops.fromFloats(col, ch), MlxC.MLX_FLOAT32);
        }
        int hv = g.numValueHeads();
        float[] negA = new float[hv];
        for (int h = 0; h < hv; h++) {
            negA[h] = (float) -StrictMath.exp(m.aLog()[h]);
        }
        MlxArray na = keep(ops, made, ops.fromFloats(negA, hv), MlxC.MLX_FLOAT32);
        MlxArray dt = keep(ops, made, ops.fromFloats(m.dtBias(), hv), MlxC.MLX_FLOAT32);
        MlxArray nw = keep(ops, made, ops.fromFloats(m.norm(), m.norm().length), MlxC.MLX_FLOAT32);
        MlxArray[] gains = gains(ops, g, made);
        MlxArray group = groups(ops, g, made);
        MlxLinear out = MlxLinear.upload(ops, m.outProj(), dtype, cpu);
        made.add(out);
        MlxTargetMlp mlp = MlxTargetMlp.upload(ops, w.mlp(), dtype, cpu, path, made);
        made.add(mlp);
        MlxArray thr = keep(ops, made, ops.fromFloats(new float[] {SOFTPLUS_THRESHOLD}, 1), MlxC.MLX_FLOAT32);
        return new MlxGdn(c, inNorm, postNorm, proj, taps, na, dt, nw, gains[0], gains[1], group, out, mlp, thr,
                dtype, compile, kernel);
    }

    /** The l2norm gains {@code [Dk^-1, Dk^-½]} as {@code [Dk]} f32 arrays (class Javadoc, step 2). */
    static MlxArray[] gains(MlxOps ops, TargetConfig.Gdn g, List<AutoCloseable> made) {
        int dk = g.keyHeadDim();
        float[] q = new float[dk];
        float[] k = new float[dk];
        java.util.Arrays.fill(q, (float) (1.0 / dk));
        java.util.Arrays.fill(k, (float) (1.0 / StrictMath.sqrt(dk)));
        return new MlxArray[] {keep(ops, made, ops.fromFloats(q, dk), MlxC.MLX_FLOAT32),
            keep(ops, made, ops.fromFloats(k, dk), MlxC.MLX_FLOAT32)};
    }

    /** {@code h / (Hv/Hk)} for every value head, or null when every value head has its own key head. */
    static MlxArray groups(MlxOps ops, TargetConfig.Gdn g, List<AutoCloseable> made) {
        int hv = g.numValueHeads();
        if (hv == g.numKeyHeads()) {
            return null;
        }
        int[] idx = new int[hv];
        for (int h = 0; h < hv; h++) {
            idx[h] = h / g.groupRatio();
        }
        MlxArray a = ops.fromInts(idx, hv);
        ops.eval(a);
        MlxArray kept = ops.scope().release(a);
        made.add(kept);
        return kept;
    }

    /** {@code a} as {@code dtype}, evaluated, released from the scope and tracked in {@code made}. */
    static MlxArray keep(MlxOps ops, List<AutoCloseable> made, MlxArray a, int dtype) {
        MlxArray x = a.dtype() == dtype ? a : ops.astype(a, dtype);
        ops.eval(x);
        MlxArray kept = ops.scope().release(x);
        made.add(kept);
        return kept;
    }

    /**
     * The layer over {@code x [B, S, H]} from {@code window [B, K−1, C]} and {@code state [B, Hv, Dk, Dv]}; with
     * {@code every} the states after each token, {@code [S·B, Hv, Dk, Dv]} (token-major), else the last one's.
     */
    Out forward(MlxOps ops, MlxArray x, MlxArray window, MlxArray state, boolean every) {
        if (!compile || mlp.isMoe()) {
            return Out.of(graph(ops, List.of(x, window, state), every), every);
        }
        if (every && compiledEvery == null) {
            compiledEvery = new MlxCompiled(ops, "gdn layer (every state)", (o, in) -> graph(o, in, true));
        } else if (!every && compiledLast == null) {
            compiledLast = new MlxCompiled(ops, "gdn layer", (o, in) -> graph(o, in, false));
        }
        return Out.of((every ? compiledEvery : compiledLast).apply(ops, List.of(x, window, state)), every);
    }

    /** How many graphs MLX traced for this layer (compile on). */
    int traces() {
        return (compiledEvery == null ? 0 : compiledEvery.traces()) + (compiledLast == null ? 0 : compiledLast.traces());
    }

    /** The layer's graph: {@code [y, u, state after the last token, states after every token (every only)]}. */
    private List<MlxArray> graph(MlxOps ops, List<MlxArray> in, boolean every) {
        MlxArray x = in.get(0);
        int b = x.dim(0);
        int s = x.dim(1);
        int ch = g.convDim();
        int kd = g.keyDim();
        int hk = g.numKeyHeads();
        int dk = g.keyHeadDim();
        int k = g.convKernel();
        // 1. projections of RMSNorm(x)
        List<MlxArray> p = proj.apply(ops, cast(ops, ops.rmsNorm(x, inNorm, eps)));
        // 2. causal conv over [window | qkv], then SiLU, in f32
        MlxArray u = ops.concatenate(List.of(in.get(1), p.get(0)), 1);                // [B, K−1+S, C]
        MlxArray uf = f32(ops, u);
        MlxArray acc = null;
        for (int j = 0; j < k; j++) {
            MlxArray term = ops.multiply(ops.slice(uf, new int[] {0, j, 0}, new int[] {b, j + s, ch}), taps[j]);
            acc = acc == null ? term : ops.add(acc, term);
        }
        MlxArray conv = ops.multiply(acc, ops.sigmoid(acc));                           // [B, S, C]
        // 3. q̂, k̂ (normalised per key head); v stays in conv
        MlxArray q = ops.reshape(ops.slice(conv, new int[] {0, 0, 0}, new int[] {b, s, kd}), b, s, hk, dk);
        MlxArray kk = ops.reshape(ops.slice(conv, new int[] {0, 0, kd}, new int[] {b, s, 2 * kd}), b, s, hk, dk);
        float l2eps = L2_EPS / dk;
        q = ops.rmsNorm(q, qGain, l2eps);
        kk = ops.rmsNorm(kk, kGain, l2eps);
        // 4. gates [B, S, Hv]
        MlxArray beta = ops.sigmoid(f32(ops, p.get(2)));
        MlxArray xa = ops.add(f32(ops, p.get(3)), dtBias);
        MlxArray sp = ops.where(ops.greater(xa, threshold), xa, ops.log1p(ops.exp(xa)));
        MlxArray alpha = ops.exp(ops.multiply(sp, negA));
        // 5. the recurrence, then 6. gated norm per value head, out_proj, residual, MLP
        Recurrence r = recurrence(ops, g, group, kernel, in.get(2), q, kk, conv, alpha, beta, every);
        return finish(ops, x, p, r.out(), u, r.last(), r.every(), every);
    }

    /** The read-outs {@code [B, S, Hv, Dv]}, the last state and (with every) all states token-major. */
    record Recurrence(MlxArray out, MlxArray last, MlxArray every) {
    }

    /**
     * Step 5 from {@code state [B, Hv, Dk, Dv]}, {@code q̂, k̂ [B, S, Hk, Dk]}, the conv output {@code conv [B, S, C]}
     * (values from column {@code 2·Hk·Dk}) and the gates {@code alpha, beta [B, S, Hv]}: through {@code kernel} when
     * there is one, else token by token in MLX ops with the heads as a batch ({@code group}: each value head's key
     * head, null when Hv = Hk).
     */
    static Recurrence recurrence(MlxOps ops, TargetConfig.Gdn g, MlxArray group, MlxGdnKernel kernel, MlxArray state,
                                 MlxArray q, MlxArray kk, MlxArray conv, MlxArray alpha, MlxArray beta, boolean every) {
        int b = q.dim(0);
        int s = q.dim(1);
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        if (kernel != null) {
            MlxGdnKernel.Out r = kernel.apply(ops, state, q, kk, conv, alpha, beta, every);
            MlxArray last = every ? ops.slice(r.states(), new int[] {(s - 1) * b, 0, 0, 0},
                    new int[] {s * b, hv, dk, dv}) : r.states();
            return new Recurrence(r.out(), last, every ? r.states() : null);
        }
        int kd = g.keyDim();
        MlxArray v = ops.reshape(ops.slice(conv, new int[] {0, 0, 2 * kd}, new int[] {b, s, g.convDim()}), b, s, hv,
                dv);
        if (group != null) {
            q = ops.take(q, group, 2);
            kk = ops.take(kk, group, 2);
        }
        Recurrence r = recur(ops, state, ops.transpose(q, 0, 2, 1, 3), ops.transpose(kk, 0, 2, 1, 3),
                ops.transpose(kk, 0, 2, 3, 1), ops.transpose(v, 0, 2, 1, 3),
                ops.reshape(ops.transpose(alpha, 0, 2, 1), b, hv, s, 1),
                ops.reshape(ops.transpose(beta, 0, 2, 1), b, hv, s, 1), every);
        return new Recurrence(ops.transpose(r.out(), 0, 2, 1, 3), r.last(), r.every());
    }

    /** Step 6 from the read-outs {@code core [B, S, Hv, Dv]}: gated norm, out_proj, residual, MLP; the outputs. */
    private List<MlxArray> finish(MlxOps ops, MlxArray x, List<MlxArray> p, MlxArray core, MlxArray u, MlxArray last,
                                  MlxArray all, boolean every) {
        int b = x.dim(0);
        int s = x.dim(1);
        int hv = g.numValueHeads();
        int dv = g.valueHeadDim();
        MlxArray z = f32(ops, ops.reshape(p.get(1), b, s, hv, dv));
        MlxArray gated = ops.multiply(ops.rmsNorm(core, norm, eps), ops.multiply(z, ops.sigmoid(z)));
        MlxArray mixed = out.apply(ops, cast(ops, ops.reshape(gated, b, s, hv * dv)));
        MlxArray h = ops.add(x, mixed);
        MlxArray y = ops.add(h, mlp.apply(ops, cast(ops, ops.rmsNorm(h, postNorm, eps))));
        List<MlxArray> res = new ArrayList<>(List.of(y, u, last));
        if (every) {
            res.add(all);
        }
        return res;
    }

    /**
     * Steps {@code state [B, Hv, Dk, Dv]} through the tokens (read-outs {@code [B, Hv, S, Dv]}): {@code q, k [B, Hv, S, Dk]}, {@code kCol [B, Hv, Dk, S]},
     * {@code v [B, Hv, S, Dv]}, {@code alpha, beta [B, Hv, S, 1]}.
     */
    private static Recurrence recur(MlxOps ops, MlxArray state, MlxArray q, MlxArray k, MlxArray kCol, MlxArray v,
                                    MlxArray alpha, MlxArray beta, boolean every) {
        int b = q.dim(0);
        int hv = q.dim(1);
        int s = q.dim(2);
        int dk = q.dim(3);
        int dv = v.dim(3);
        List<MlxArray> outs = new ArrayList<>(s);
        List<MlxArray> states = new ArrayList<>(s);
        MlxArray st = state;
        for (int t = 0; t < s; t++) {
            int[] from = {0, 0, t, 0};
            MlxArray a = ops.slice(alpha, from, new int[] {b, hv, t + 1, 1});
            MlxArray bt = ops.slice(beta, from, new int[] {b, hv, t + 1, 1});
            MlxArray kt = ops.slice(k, from, new int[] {b, hv, t + 1, dk});
            MlxArray kc = ops.slice(kCol, new int[] {0, 0, 0, t}, new int[] {b, hv, dk, t + 1});
            MlxArray vt = ops.slice(v, from, new int[] {b, hv, t + 1, dv});
            MlxArray qt = ops.slice(q, from, new int[] {b, hv, t + 1, dk});
            st = ops.multiply(st, a);
            MlxArray delta = ops.multiply(ops.subtract(vt, ops.matmul(kt, st)), bt);    // [B, Hv, 1, Dv]
            st = ops.add(st, ops.matmul(kc, delta));
            outs.add(ops.matmul(qt, st));
            states.add(st);
        }
        MlxArray out = s == 1 ? outs.getFirst() : ops.concatenate(outs, 2);
        MlxArray all = every ? ops.reshape(ops.stack(states), s * b, hv, dk, dv) : null;
        return new Recurrence(out, st, all);
    }

    private static MlxArray f32(MlxOps ops, MlxArray a) {
        return a.dtype() == MlxC.MLX_FLOAT32 ? a : ops.astype(a, MlxC.MLX_FLOAT32);
    }

    private MlxArray cast(MlxOps ops, MlxArray a) {
        return a.dtype() == dtype ? a : ops.astype(a, dtype);
    }

    /** The layer's MLP. */
    MlxTargetMlp mlp() {
        return mlp;
    }

    @Override
    public void close() {
        proj.close();
        out.close();
        mlp.close();
        for (MlxArray a : taps) {
            a.close();
        }
        for (MlxArray a : new MlxArray[] {inNorm, postNorm, negA, dtBias, norm, qGain, kGain, group, threshold}) {
            if (a != null) {
                a.close();
            }
        }
        for (MlxCompiled c : new MlxCompiled[] {compiledEvery, compiledLast}) {
            if (c != null) {
                c.close();
            }
        }
    }
}
