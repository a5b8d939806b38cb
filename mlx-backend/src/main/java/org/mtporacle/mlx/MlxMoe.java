package org.mtporacle.mlx;

import java.util.ArrayList;
import java.util.List;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

/**
 * The MoE MLP (spec §12.3) on MLX, per expert: the router and its f32 softmax on the device, the probabilities read
 * back (one host read per forward), top-k with the spec's tie rule and the weights on the host, each chosen expert
 * run once over the rows that chose it, the outputs put back in slot order by one gather and mixed, plus the
 * sigmoid-gated shared expert. Only chosen experts' weights are read.
 */
final class MlxMoe implements AutoCloseable {
    private final MlxLinear router, sharedGate, sGate, sUp, sDown;
    private final MlxLinear[] gate, up, down; // per expert
    private final int topK;
    private final boolean renormalise;
    private final int dtype;

    MlxMoe(MlxOps ops, MlpWeights.Moe w, int dtype, boolean quantF32, List<AutoCloseable> made) {
        this.dtype = dtype;
        this.topK = w.topK();
        this.renormalise = w.normTopK();
        router = track(made, MlxLinear.upload(ops, w.router(), dtype, quantF32));
        sharedGate = track(made, MlxLinear.upload(ops, w.sharedExpertGate(), dtype, quantF32));
        sGate = track(made, MlxLinear.upload(ops, w.sharedExpert().gateProj(), dtype, quantF32));
        sUp = track(made, MlxLinear.upload(ops, w.sharedExpert().upProj(), dtype, quantF32));
        sDown = track(made, MlxLinear.upload(ops, w.sharedExpert().downProj(), dtype, quantF32));
        int e = w.numExperts();
        gate = new MlxLinear[e];
        up = new MlxLinear[e];
        down = new MlxLinear[e];
        for (int x = 0; x < e; x++) {
            MlpWeights.Dense d = w.experts().get(x);
            gate[x] = track(made, MlxLinear.upload(ops, d.gateProj(), dtype, quantF32));
            up[x] = track(made, MlxLinear.upload(ops, d.upProj(), dtype, quantF32));
            down[x] = track(made, MlxLinear.upload(ops, d.downProj(), dtype, quantF32));
        }
    }

    private static <T extends AutoCloseable> T track(List<AutoCloseable> made, T t) {
        made.add(t);
        return t;
    }

    /**
     * {@code m [B, S, H]} for {@code n [B, S, H]}; {@code chosen[b·S + t]} receives that row's experts in slot order.
     */
    MlxArray apply(MlxOps ops, MlxArray n, int[][] chosen) {
        int b = n.dim(0);
        int s = n.dim(1);
        int h = n.dim(2);
        int rows = b * s;
        int e = gate.length;
        MlxArray x = ops.reshape(n, rows, h);
        // 1–2. router logits, softmax in f32 (spec §12.3), read back
        MlxArray logits = ops.astype(router.apply(ops, x), MlxC.MLX_FLOAT32);
        float[] p = ops.toFloats(ops.exp(ops.subtract(logits, ops.logsumexp(logits, -1, true))));
        // 3–4. top-k (lower index first on equal probability) and weights, on the host
        float[] weights = new float[rows * topK];
        List<List<Integer>> slotsOf = new ArrayList<>();
        for (int i = 0; i < e; i++) {
            slotsOf.add(new ArrayList<>());
        }
        for (int r = 0; r < rows; r++) {
            chosen[r] = topK(p, r * e, e);
            float sum = 0f;
            for (int j = 0; j < topK; j++) {
                weights[r * topK + j] = p[r * e + chosen[r][j]];
                sum += weights[r * topK + j];
                slotsOf.get(chosen[r][j]).add(r * topK + j);
            }
            for (int j = 0; renormalise && j < topK; j++) {
                weights[r * topK + j] = weights[r * topK + j] / sum;
            }
        }
        // 5. each chosen expert once over its rows; outputs concatenated in expert order
        List<MlxArray> outs = new ArrayList<>();
        int[] where = new int[rows * topK]; // slot → row of the concatenation
        int at = 0;
        for (int i = 0; i < e; i++) {
            List<Integer> slots = slotsOf.get(i);
            if (slots.isEmpty()) {
                continue;
            }
            int[] idx = new int[slots.size()];
            for (int k = 0; k < idx.length; k++) {
                idx[k] = slots.get(k) / topK;
                where[slots.get(k)] = at++;
            }
            MlxArray xe = ops.take(x, ops.fromInts(idx, idx.length), 0);
            outs.add(swiglu(ops, gate[i], up[i], down[i], xe));
        }
        MlxArray all = outs.size() == 1 ? outs.getFirst() : ops.concatenate(outs, 0);
        // 6. routed = Σ_j w_j · y_j over slots
        MlxArray slotted = ops.reshape(ops.take(all, ops.fromInts(where, where.length), 0), rows, topK, h);
        MlxArray w = ops.fromFloats(weights, rows, topK, 1);
        if (dtype != MlxC.MLX_FLOAT32) {
            w = ops.astype(w, dtype);
        }
        MlxArray routed = ops.sum(ops.multiply(slotted, w), 1, false);
        // 7–8. the shared expert, gated by σ(n · W_gateᵀ), one scalar per row
        MlxArray shared = swiglu(ops, sGate, sUp, sDown, x);
        MlxArray g = ops.sigmoid(sharedGate.apply(ops, x));
        return ops.reshape(ops.add(routed, ops.multiply(g, shared)), b, s, h);
    }

    private int[] topK(float[] p, int off, int e) {
        boolean[] taken = new boolean[e];
        int[] out = new int[topK];
        for (int j = 0; j < topK; j++) {
            int best = -1;
            for (int i = 0; i < e; i++) {
                if (!taken[i] && (best < 0 || p[off + i] > p[off + best])) {
                    best = i;
                }
            }
            taken[best] = true;
            out[j] = best;
        }
        return out;
    }

    private static MlxArray swiglu(MlxOps ops, MlxLinear gate, MlxLinear up, MlxLinear down, MlxArray x) {
        MlxArray gt = gate.apply(ops, x);
        return down.apply(ops, ops.multiply(ops.multiply(gt, ops.sigmoid(gt)), up.apply(ops, x)));
    }

    @Override
    public void close() {
        for (MlxLinear l : List.of(router, sharedGate, sGate, sUp, sDown)) {
            l.close();
        }
        for (int i = 0; i < gate.length; i++) {
            gate[i].close();
            up[i].close();
            down[i].close();
        }
    }
}
