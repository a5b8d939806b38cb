package org.mtporacle.mlx;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.List;

/**
 * A target layer's MLP on MLX (spec §13.1): dense SwiGLU {@code down(silu(gate(x)) ⊙ up(x))} with gate and up as one
 * product ({@link MlxStack}), or the routed MoE MLP ({@link MlxMoe}, spec §12). Owns its weights.
 */
final class MlxTargetMlp implements AutoCloseable {
    private final MlxStack gateUp; // dense, else null
    private final MlxLinear down;  // dense, else null
    private final MlxMoe moe;      // MoE, else null

    MlxTargetMlp(MlxStack gateUp, MlxLinear down, MlxMoe moe) {
        this.gateUp = gateUp;
        this.down = down;
        this.moe = moe;
    }

    /** Uploads {@code w}; a MoE MLP runs on {@code path}; every array made is tracked in {@code made}. */
    static MlxTargetMlp upload(MlxOps ops, MlpWeights w, int dtype, boolean cpu, MlxMoe.Path path,
                               List<AutoCloseable> made) {
        if (w instanceof MlpWeights.Moe m) {
            // MlxMoe tracks its own arrays in made
            return new MlxTargetMlp(null, null, new MlxMoe(ops, m, dtype, cpu, path, made));
        }
        MlpWeights.Dense d = (MlpWeights.Dense) w;
        MlxStack gu = MlxStack.upload(ops, List.of(d.gateProj(), d.upProj()), dtype, cpu);
        made.add(gu);
        MlxLinear dn = MlxLinear.upload(ops, d.downProj(), dtype, cpu);
        made.add(dn);
        return new MlxTargetMlp(gu, dn, null);
    }

    boolean isMoe() {
        return moe != null;
    }

    /**
     * The sink of the running forward's router choices (spec §12.5), set by {@link MlxTarget#forward} around this
     * layer's forward on the MLX thread; null outside it.
     */
    private List<MlxMoe.Choices> routes;

    /** Sends the next forwards' router choices to {@code sink} (null: stop). */
    void routeInto(List<MlxMoe.Choices> sink) {
        this.routes = sink;
    }

    /** The MLP of {@code n [B, S, H]}; a MoE layer's router choices go to the sink set by {@link #routeInto}. */
    MlxArray apply(MlxOps ops, MlxArray n) {
        if (moe != null) {
            MlxMoe.Routed r = moe.apply(ops, n);
            if (routes != null) {
                routes.add(r.choices());
            }
            return r.out();
        }
        List<MlxArray> gu = gateUp.apply(ops, n);
        MlxArray g = gu.get(0);
        return down.apply(ops, ops.multiply(ops.multiply(g, ops.sigmoid(g)), gu.get(1)));
    }

    @Override
    public void close() {
        if (moe != null) {
            moe.close();
        } else {
            gateUp.close();
            down.close();
        }
    }
}
