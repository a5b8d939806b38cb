package org.mtporacle.mlx;

import org.mtporacle.api.DType;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * A hybrid target loaded into MLX (spec §13): every layer's weights on one device stream in one compute dtype (the
 * weights' own with {@code precision=native}, f32 with {@code precision=f32}); Gated DeltaNet layers ({@link MlxGdn}),
 * gated attention layers ({@link MlxTargetAttention}), the final norm and the head. With {@code precision=native} the
 * products, attention and caches are in the weights' dtype while the residual stream, every norm, the GDN recurrence
 * and the head (its weights upcast once at load) are f32: the logits come out in f32. A forward of {@code B} rows of
 * {@code S} tokens is one graph with one host read (logits and both taps together); row state never leaves the device
 * between calls ({@link MlxTargetRows}).
 */
public final class MlxTarget implements LoadedTarget {
    private final TargetModel model;
    private final MlxLibrary lib;
    private final MlxStream stream;
    private final MlxDraftModel.Precision precision;
    private final int dtype;
    private final DType stateDType;
    private final Object[] layers; // MlxGdn or MlxTargetAttention, by layer
    private final MlxLinear embedding, head;
    private final MlxArray finalNorm;
    private final MlxRope rope;
    private final boolean compile;
    private final MlxGdnKernel gdnKernel; // null: the recurrence as ops
    private volatile int pipeline = PIPELINE_LAYERS;
    private volatile boolean closed;

    /**
     * A forward hands the device each run of this many layers as soon as their graph is built ({@code mlx_async_eval}),
     * so the device computes them while the host builds the next ones; 0: one evaluation at the end. Property
     * {@code mtp.mlx.pipelineLayers}, default 0. Values do not change (the same graph, evaluated in pieces). Measured
     * on an H200 (docs/mlx-gpu-target.md): no gain, as MLX's CUDA {@code async_eval} spends about as long launching
     * as the synchronous evaluation takes, so the default stays off.
     */
    static final int PIPELINE_LAYERS = Math.max(0, Integer.getInteger("mtp.mlx.pipelineLayers", 0));

    /** The parts of a target already on the device (weights uploaded or made there). */
    record Parts(Object[] layers, MlxLinear embedding, MlxLinear head, MlxArray finalNorm, MlxRope rope,
                 MlxGdnKernel gdnKernel) {
    }

    /**
     * Uploads {@code model}'s weights; {@code moe}: a MoE MLP's path (null: its default); {@code gdnKernel}: the GDN
     * recurrence as {@link MlxGdnKernel} (true), as ops (false), or the kernel where it can run (null).
     */
    MlxTarget(TargetModel model, MlxLibrary lib, boolean gpu, MlxDraftModel.Precision precision, MlxMoe.Path moe,
              boolean compile, Boolean gdnKernel) {
        this(model, lib, MlxStream.open(lib, gpu), precision, computeDtype(model, precision), compile,
                (ops, dt) -> upload(ops, model, dt, !gpu, moe, compile, lib, gdnKernel));
    }

    /** A target over parts built by {@code parts} on this target's stream (benches build synthetic weights there). */
    MlxTarget(TargetModel model, MlxLibrary lib, MlxStream stream, MlxDraftModel.Precision precision, int dtype,
              boolean compile, PartsBuilder parts) {
        this.model = model;
        this.lib = lib;
        this.stream = stream;
        this.precision = precision;
        this.dtype = dtype;
        this.compile = compile;
        this.stateDType = dtype == MlxC.MLX_BFLOAT16 ? DType.BF16 : dtype == MlxC.MLX_FLOAT16 ? DType.F16 : DType.F32;
        try {
            MlxSelfCheck.verify(lib, stream);
            Parts p = lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    return parts.build(new MlxOps(stream, scope), dtype);
                }
            });
            this.layers = p.layers();
            this.embedding = p.embedding();
            this.head = p.head();
            this.finalNorm = p.finalNorm();
            this.rope = p.rope();
            this.gdnKernel = p.gdnKernel();
        } catch (RuntimeException e) {
            stream.close();
            throw e;
        }
    }

    /** Builds a target's parts with ops on its stream, in its compute dtype. */
    @FunctionalInterface
    interface PartsBuilder {
        Parts build(MlxOps ops, int dtype);
    }

    private static int computeDtype(TargetModel model, MlxDraftModel.Precision precision) {
        if (precision == MlxDraftModel.Precision.F32) {
            return MlxC.MLX_FLOAT32;
        }
        DType d = switch (model.weights().embedding()) {
            case LinearWeight.Dense x -> x.weight().dtype();
            case LinearWeight.Affine a -> a.scales().dtype();
        };
        return switch (d) {
            case BF16 -> MlxC.MLX_BFLOAT16;
            case F16 -> MlxC.MLX_FLOAT16;
            default -> MlxC.MLX_FLOAT32;
        };
    }

    private static Parts upload(MlxOps ops, TargetModel model, int dtype, boolean cpu, MlxMoe.Path moe,
                                boolean compile, MlxLibrary lib, Boolean gdnKernel) {
        TargetConfig c = model.config();
        TargetWeights w = model.weights();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            MlxGdnKernel kernel = gdnKernel(ops, c, gdnKernel);
            if (kernel != null) {
                made.add(kernel);
            }
            Object[] layers = new Object[c.layerCount()];
            for (int l = 0; l < layers.length; l++) {
                TargetWeights.Layer lw = w.layers().get(l);
                MlxMoe.Path path = lw.mlp() instanceof org.mtporacle.api.MlpWeights.Moe m
                        ? MlxMoe.choose(m, moe, !cpu && lib.hasCuda(), lib.version()) : null;
                layers[l] = switch (lw.mixer()) {
                    case TargetWeights.Gdn g -> MlxGdn.upload(ops, c, lw, dtype, cpu, path, compile, kernel, made);
                    case TargetWeights.Attention a -> MlxTargetAttention.upload(ops, c, lw, dtype, cpu, path, made);
                };
                made.add((AutoCloseable) layers[l]);
            }
            MlxLinear emb = MlxLinear.upload(ops, w.embedding(), dtype, cpu);
            made.add(emb);
            // the head in f32: bf16 logits of magnitude 32–64 are 0.25 apart, more than a greedy token's allowance
            MlxLinear head = w.tied() && dtype == MlxC.MLX_FLOAT32 ? emb
                    : MlxLinear.upload(ops, w.head(), MlxC.MLX_FLOAT32, cpu);
            made.add(head);
            MlxArray fn = MlxGdn.keep(ops, made, ops.fromFloats(w.finalNorm(), w.finalNorm().length),
                    MlxC.MLX_FLOAT32);
            MlxRope rope = new MlxRope(ops, c.shape());
            return new Parts(layers, emb, head, fn, rope, kernel);
        } catch (RuntimeException | Error e) {
            for (int i = made.size() - 1; i >= 0; i--) {
                try {
                    made.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /**
     * The fused GDN recurrence for {@code c} on {@code ops}' stream when {@code wanted} is true, or null (the ops) when
     * false; when null, the kernel where it can run. Refuses {@code true} where it cannot, saying why.
     */
    static MlxGdnKernel gdnKernel(MlxOps ops, TargetConfig c, Boolean wanted) {
        if (Boolean.FALSE.equals(wanted) || c.layers().stream()
                .noneMatch(t -> t == TargetConfig.LayerType.LINEAR_ATTENTION)) {
            return null;
        }
        String why = org.mtporacle.mlx.handle.MlxCudaKernel.unavailable(ops.library(), ops.stream());
        if (why != null) {
            if (wanted == null) {
                return null;
            }
            throw MtpException.invalidArgument("mlx: gdn=kernel, but " + why + " (use gdn=ops or gdn=auto)");
        }
        return new MlxGdnKernel(ops.library(), c.gdn());
    }

    @Override
    public TargetModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "mlx " + (stream.isGpu() ? "gpu" : "cpu") + " " + stateDType.name().toLowerCase() + " (precision="
                + precision.name().toLowerCase() + ", MLX " + lib.version() + "; GDN conv, gates, norms and "
                + "recurrence, the residual stream, the norms and the head in f32; recurrent states f32, per-token states kept "
                + "on the device during a round"
                + (compile ? "; compile=on: dense GDN layers through mlx_compile" : "")
                + (gdnKernel != null ? "; GDN recurrence as one CUDA kernel per layer" : "") + ")";
    }

    @Override
    public TargetRows openRows(List<TargetCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the target is closed");
        }
        MlxTargetRows rows = new MlxTargetRows(this);
        try {
            rows.append(checkpoints);
        } catch (RuntimeException e) {
            rows.close();
            throw e;
        }
        return rows;
    }

    /** What one forward computed, all on the device. */
    record Result(MlxArray host,      // logits [B, n, V], pre-norm and post-norm taps [B, S, H], then the device-side
                                      // router choices [B·S·K] per MoE layer (as f32), flattened together
                  List<Routes> routes, // each MoE layer's choices, in layer order
                  MlxArray[] inputs,  // [nGDN] conv inputs u [B, K−1+S, C]
                  MlxArray[] last,    // [nGDN] recurrent states after the last token [B, Hv, Dk, Dv]
                  MlxArray[] every,   // [nGDN] states after every token [S·B, Hv, Dk, Dv] (every only), else null
                  MlxArray[] keys, MlxArray[] values) { // [nFull] caches with the new positions
    }

    /** One MoE layer's router choices in a forward (spec §12.5): {@code [B·S][K]}, on the host or the device. */
    record Routes(int layer, MlxMoe.Choices choices) {
    }

    /**
     * Spec §13.1 for {@code ids [B, S]} of rows that have processed {@code at[b]} tokens, from their windows, states
     * and caches (the caches have room for {@code S} more positions per row); logits at every position when
     * {@code allLogits}, else at the last.
     */
    Result forward(MlxOps ops, int[] ids, int[] at, int s, MlxArray[] conv, MlxArray[] rec, MlxArray[] keys,
                   MlxArray[] values, boolean every, boolean allLogits) {
        TargetConfig c = model.config();
        int b = at.length;
        int h = c.shape().hiddenSize();
        MlxArray x = embedding.gather(ops, ops.fromInts(ids, b, s), dtype);
        x = x.dtype() == MlxC.MLX_FLOAT32 ? x : ops.astype(x, MlxC.MLX_FLOAT32); // the residual stream is f32
        int nGdn = conv.length;
        int nFull = keys.length;
        MlxArray[] inputs = new MlxArray[nGdn];
        MlxArray[] last = new MlxArray[nGdn];
        MlxArray[] all = every ? new MlxArray[nGdn] : null;
        MlxArray[] k2 = new MlxArray[nFull];
        MlxArray[] v2 = new MlxArray[nFull];
        MlxArray[] tables = nFull > 0 && c.shape().rotaryDims() > 0 ? rope.tables(ops, at, s) : null;
        List<Routes> routes = new ArrayList<>();
        for (int l = 0; l < layers.length; l++) {
            int slot = c.slot(l);
            MlxTargetMlp mlp = layers[l] instanceof MlxGdn gdn ? gdn.mlp() : ((MlxTargetAttention) layers[l]).mlp();
            List<MlxMoe.Choices> sink = mlp.isMoe() ? new ArrayList<>() : null;
            mlp.routeInto(sink);
            try {
                if (layers[l] instanceof MlxGdn gdn) {
                    MlxGdn.Out o = gdn.forward(ops, x, conv[slot], rec[slot], every);
                    x = o.y();
                    inputs[slot] = o.inputs();
                    last[slot] = o.last();
                    if (every) {
                        all[slot] = o.every();
                    }
                } else {
                    MlxTargetAttention.Out o = ((MlxTargetAttention) layers[l]).forward(ops, x, keys[slot],
                            values[slot], at, rope, tables);
                    x = o.y();
                    k2[slot] = o.keys();
                    v2[slot] = o.values();
                }
            } finally {
                mlp.routeInto(null);
            }
            if (sink != null) {
                for (MlxMoe.Choices ch : sink) {
                    routes.add(new Routes(l, ch));
                }
            }
            int step = pipeline;
            if (step > 0 && (l + 1) % step == 0 && l + 1 < layers.length) {
                List<MlxArray> done = new ArrayList<>(List.of(x));
                if (layers[l] instanceof MlxGdn) {
                    done.add(inputs[slot]);
                    done.add(every ? all[slot] : last[slot]);
                } else {
                    done.add(k2[slot]);
                    done.add(v2[slot]);
                }
                done.removeIf(java.util.Objects::isNull);
                ops.asyncEvalAll(done);
            }
        }
        MlxArray post = ops.rmsNorm(x, finalNorm, (float) c.shape().rmsNormEps());
        MlxArray last1 = allLogits || s == 1 ? post
                : ops.slice(post, new int[] {0, s - 1, 0}, new int[] {b, s, h});
        MlxArray logits = head.apply(ops, last1);
        List<MlxArray> parts = new ArrayList<>(List.of(flat(ops, logits), flat(ops, x), flat(ops, post)));
        for (Routes r : routes) {
            MlxArray d = r.choices().onDevice();
            if (d != null) {
                parts.add(flat(ops, ops.astype(d, MlxC.MLX_FLOAT32))); // indices < E ≤ 2^24: exact in f32
            }
        }
        MlxArray host = ops.concatenate(parts, 0);
        return new Result(host, routes, inputs, last, all, k2, v2);
    }

    private static MlxArray flat(MlxOps ops, MlxArray a) {
        int n = 1;
        for (int d : a.shape()) {
            n = Math.multiplyExact(n, d);
        }
        MlxArray f = ops.reshape(a, n);
        return f.dtype() == MlxC.MLX_FLOAT32 ? f : ops.astype(f, MlxC.MLX_FLOAT32);
    }

    int dtype() {
        return dtype;
    }

    DType stateDType() {
        return stateDType;
    }

    MlxLibrary library() {
        return lib;
    }

    /** Sets how many layers a forward builds before handing them to the device (0: all, then one evaluation). */
    void pipelineLayers(int layersPerEval) {
        if (layersPerEval < 0) {
            throw MtpException.invalidArgument("pipelineLayers: " + layersPerEval + " < 0");
        }
        pipeline = layersPerEval;
    }

    /** How many graphs MLX traced for compiled layers so far. */
    int traces() {
        int n = 0;
        for (Object l : layers) {
            n += l instanceof MlxGdn g ? g.traces() : 0;
        }
        return n;
    }

    boolean isClosed() {
        return closed;
    }

    /** Runs {@code work} on the MLX thread with a fresh scope and this target's stream. */
    <T> T call(Function<MlxOps, T> work) {
        if (closed) {
            throw MtpException.illegalState("mlx: the target is closed");
        }
        return lib.thread().call(() -> {
            try (MlxScope scope = new MlxScope(lib)) {
                return work.apply(new MlxOps(stream, scope));
            }
        });
    }

    /** "mlx gpu" or "mlx cpu". */
    public String device() {
        return "mlx " + (stream.isGpu() ? "gpu" : "cpu");
    }

    /**
     * Times {@code −x} over a {@code bytes}-byte f32 array on this target's stream (median of {@code rounds} after two
     * warm-ups), in bytes read plus written per second: the HBM floor a bench divides weight bytes by.
     */
    double copyBytesPerSecond(long bytes, int rounds) {
        if (bytes < (1 << 20) || rounds < 1 || bytes / 4 > Integer.MAX_VALUE) {
            throw MtpException.invalidArgument("bandwidth: bytes = " + bytes + ", rounds = " + rounds
                    + "; expected 1 MiB ≤ bytes ≤ 8 GiB and rounds ≥ 1");
        }
        int n = (int) (bytes / 4);
        double[] seconds = new double[rounds + 2];
        call(ops -> {
            MlxArray x = ops.add(ops.zeros(MlxC.MLX_FLOAT32, n), ops.fromFloats(new float[] {1f}, 1));
            ops.eval(x);
            for (int r = 0; r < seconds.length; r++) {
                try (MlxScope round = new MlxScope(lib)) {
                    MlxOps in = new MlxOps(stream, round);
                    long start = System.nanoTime();
                    in.eval(in.negative(x));
                    seconds[r] = (System.nanoTime() - start) / 1e9;
                }
            }
            return null;
        });
        double[] timed = java.util.Arrays.copyOfRange(seconds, 2, seconds.length);
        java.util.Arrays.sort(timed);
        return 2.0 * n * 4 / timed[timed.length / 2];
    }


    @Override
    public void close() {
        if (!closed) {
            closed = true;
            lib.thread().run(() -> {
                for (Object l : layers) {
                    if (l instanceof MlxGdn g) {
                        g.close();
                    } else {
                        ((MlxTargetAttention) l).close();
                    }
                }
                embedding.close();
                if (head != embedding) {
                    head.close();
                }
                finalNorm.close();
                rope.close();
                if (gdnKernel != null) {
                    gdnKernel.close();
                }
            });
            stream.close();
        }
    }
}
