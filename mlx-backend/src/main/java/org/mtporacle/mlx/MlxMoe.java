package org.mtporacle.mlx;

import java.util.ArrayList;
import java.util.List;

import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

/**
 * The MoE MLP (spec §12.3) on MLX, on one of two paths ({@link Path}); both compute the router and its f32 softmax on
 * the device, mix the chosen experts' outputs by their weights in slot order and add the sigmoid-gated shared
 * expert, and read only the chosen experts' weights.
 * <ul>
 *   <li>{@link Path#GATHER}: top-k on the device (the stable {@code argsort} of {@code −p}, so exactly equal
 *   probabilities go to the lower expert index, spec §12.3 step 3), the weights renormalised on the device, and the
 *   experts stacked {@code [E, …]} at load and applied with {@code gather_mm} / {@code gather_qmm}: a forward needs
 *   no host read; its choices stay on the device until the call reports them ({@link Choices#resolveAll}).</li>
 *   <li>{@link Path#PER_EXPERT}: the probabilities read back (one host read per forward), top-k and the weights on the
 *   host, each chosen expert run once over the rows that chose it, the outputs put back in slot order by one
 *   gather.</li>
 * </ul>
 */
final class MlxMoe implements AutoCloseable {
    /** How the routed experts run (the MLX backend's {@code moe} option). */
    enum Path {
        GATHER("gather"), PER_EXPERT("per-expert");

        final String option;

        Path(String option) {
            this.option = option;
        }

        /** The path named by a {@code moe} option value. */
        static Path named(String value) {
            for (Path p : values()) {
                if (p.option.equals(value)) {
                    return p;
                }
            }
            throw MtpException.invalidArgument("mlx: moe = '" + value + "', expected gather or per-expert");
        }
    }

    private final MlxLinear router, sharedGate, sGate, sUp, sDown;
    private final MlxLinear[] gate, up, down; // per expert (PER_EXPERT), else null
    private final Stacked gateS, upS, downS;  // stacked [E, …] (GATHER), else null
    private final int experts;
    private final int topK;
    private final boolean renormalise;
    private final int dtype;
    private final Path path;

    /** The path a load takes when the {@code moe} option does not name one. */
    static final Path DEFAULT = Path.GATHER;

    /**
     * The path for {@code w} on this device: {@code requested} (the {@code moe} option; null: {@link #DEFAULT}),
     * except that experts of different formats cannot be stacked, MLX 0.31's CUDA backend has no {@code gather_qmm}
     * kernel ({@code NO_GPU(GatherQMM)}) and runs {@code gather_mm} of one row only over widths that are multiples of
     * 32: there the default falls back to per expert.
     *
     * @throws MtpException INVALID_ARGUMENT or UNAVAILABLE when {@code moe=gather} is asked for where it cannot run
     */
    static Path choose(MlpWeights.Moe w, Path requested, boolean cuda, String mlxVersion) {
        String mixed = mixedFormats(w);
        boolean quantized = w.experts().getFirst().gateProj() instanceof LinearWeight.Affine;
        if (mixed != null) {
            if (requested == Path.GATHER) {
                throw MtpException.invalidArgument("mlx: moe=gather needs experts of one format, but " + mixed
                        + " (use moe=per-expert)");
            }
            return Path.PER_EXPERT;
        }
        if (quantized && cuda && mlxVersion.startsWith("0.31.")) {
            if (requested == Path.GATHER) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: moe=gather on quantized experts needs "
                        + "gather_qmm, which MLX " + mlxVersion + " does not implement on CUDA (use moe=per-expert)");
            }
            return Path.PER_EXPERT;
        }
        int h = w.router().inFeatures();
        int ie = w.expertWidth();
        if (!quantized && cuda && mlxVersion.startsWith("0.31.") && (h % 32 != 0 || ie % 32 != 0)) {
            // MLX 0.31's CUDA gather_mm runs one-row products only as a gemv over a width that is a multiple of 32
            // (else it throws "NYI")
            if (requested == Path.GATHER) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: moe=gather on CUDA with MLX " + mlxVersion
                        + " needs the hidden size (" + h + ") and the expert width (" + ie + ") to be multiples of "
                        + "32 (use moe=per-expert)");
            }
            return Path.PER_EXPERT;
        }
        return requested != null ? requested : DEFAULT;
    }

    /**
     * Uploads {@code w} for {@code path} (from {@link #choose}). With {@code cpu} (MLX's CPU, where
     * {@code gather_mm} computes only f32) stacked dense experts are kept in f32 and their products run on f32
     * activations, rounded to the compute dtype afterwards, as quantized products do there ({@link MlxLinear#upload}).
     */
    MlxMoe(MlxOps ops, MlpWeights.Moe w, int dtype, boolean cpu, Path path, List<AutoCloseable> made) {
        this.dtype = dtype;
        this.topK = w.topK();
        this.renormalise = w.normTopK();
        this.experts = w.numExperts();
        if (path == Path.GATHER && mixedFormats(w) != null) {
            throw new IllegalArgumentException("mlx: MoE path gather for experts of mixed formats: " + mixedFormats(w));
        }
        this.path = path;
        router = track(made, MlxLinear.upload(ops, w.router(), dtype, cpu));
        sharedGate = track(made, MlxLinear.upload(ops, w.sharedExpertGate(), dtype, cpu));
        sGate = track(made, MlxLinear.upload(ops, w.sharedExpert().gateProj(), dtype, cpu));
        sUp = track(made, MlxLinear.upload(ops, w.sharedExpert().upProj(), dtype, cpu));
        sDown = track(made, MlxLinear.upload(ops, w.sharedExpert().downProj(), dtype, cpu));
        if (path == Path.GATHER) {
            gate = up = down = null;
            List<MlpWeights.Dense> ex = w.experts();
            gateS = track(made, Stacked.upload(ops, ex.stream().map(MlpWeights.Dense::gateProj).toList(), dtype,
                    cpu));
            upS = track(made, Stacked.upload(ops, ex.stream().map(MlpWeights.Dense::upProj).toList(), dtype, cpu));
            downS = track(made, Stacked.upload(ops, ex.stream().map(MlpWeights.Dense::downProj).toList(), dtype,
                    cpu));
        } else {
            gateS = upS = downS = null;
            gate = new MlxLinear[experts];
            up = new MlxLinear[experts];
            down = new MlxLinear[experts];
            for (int x = 0; x < experts; x++) {
                MlpWeights.Dense d = w.experts().get(x);
                gate[x] = track(made, MlxLinear.upload(ops, d.gateProj(), dtype, cpu));
                up[x] = track(made, MlxLinear.upload(ops, d.upProj(), dtype, cpu));
                down[x] = track(made, MlxLinear.upload(ops, d.downProj(), dtype, cpu));
            }
        }
    }

    /** Null when every expert's projections share one format (dense, or affine of one group size and bit width). */
    private static String mixedFormats(MlpWeights.Moe w) {
        MlpWeights.Dense first = w.experts().getFirst();
        for (int e = 1; e < w.numExperts(); e++) {
            MlpWeights.Dense d = w.experts().get(e);
            String[] names = {"gate_proj", "up_proj", "down_proj"};
            LinearWeight[] a = {first.gateProj(), first.upProj(), first.downProj()};
            LinearWeight[] b = {d.gateProj(), d.upProj(), d.downProj()};
            for (int i = 0; i < 3; i++) {
                if (!format(a[i]).equals(format(b[i]))) {
                    return "expert " + e + "'s " + names[i] + " is " + format(b[i]) + " and expert 0's "
                            + format(a[i]);
                }
            }
        }
        return null;
    }

    private static String format(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> "dense";
            case LinearWeight.Affine a -> a.bits() + "-bit group " + a.groupSize();
        };
    }

    private static <T extends AutoCloseable> T track(List<AutoCloseable> made, T t) {
        made.add(t);
        return t;
    }

    Path path() {
        return path;
    }

    /** A forward's MoE output {@code m [B, S, H]} and each forward row's chosen experts. */
    record Routed(MlxArray out, Choices choices) {
    }

    /**
     * One forward's router choices, {@code [B·S][K]} in slot order: already on the host (per-expert path) or still on
     * the device ({@code [B·S, K]} uint32, gather path) until {@link #resolveAll} reads them.
     */
    static final class Choices {
        private int[][] host;
        private final MlxArray device;
        private final int rows;
        private final int k;

        private Choices(int[][] host, MlxArray device, int rows, int k) {
            this.host = host;
            this.device = device;
            this.rows = rows;
            this.k = k;
        }

        /** The device-side choices {@code [B·S, K]} uint32 (gather path), or null when they are on the host. */
        MlxArray onDevice() {
            return host == null ? device : null;
        }

        /** Fills in device-side choices from {@code flat} at {@code at}, {@code [B·S·K]} in row-major order. */
        void resolve(float[] flat, int at) {
            host = new int[rows][k];
            for (int r = 0; r < rows; r++) {
                for (int j = 0; j < k; j++) {
                    host[r][j] = (int) flat[at + r * k + j];
                }
            }
        }

        /** {@code B·S·K}, the number of values {@link #resolve} reads. */
        int size() {
            return rows * k;
        }

        /** The choices; only after {@link #resolveAll} for device choices. */
        int[][] experts() {
            if (host == null) {
                throw new IllegalStateException("mlx: router choices not read from the device yet");
            }
            return host;
        }

        /** Reads every device-side choice of {@code all} with one host read (their forwards are evaluated by then). */
        static void resolveAll(MlxOps ops, List<Choices> all) {
            List<MlxArray> pending = new ArrayList<>();
            for (Choices c : all) {
                if (c.host == null) {
                    pending.add(ops.reshape(c.device, c.rows * c.k));
                }
            }
            if (pending.isEmpty()) {
                return;
            }
            int[] flat = ops.toInts(pending.size() == 1 ? pending.getFirst() : ops.concatenate(pending, 0));
            int at = 0;
            for (Choices c : all) {
                if (c.host != null) {
                    continue;
                }
                c.host = new int[c.rows][c.k];
                for (int r = 0; r < c.rows; r++) {
                    System.arraycopy(flat, at + r * c.k, c.host[r], 0, c.k);
                }
                at += c.rows * c.k;
            }
        }
    }

    /** {@code m [B, S, H]} for {@code n [B, S, H]}, and each forward row's ({@code b·S + t}) experts. */
    Routed apply(MlxOps ops, MlxArray n) {
        int b = n.dim(0);
        int s = n.dim(1);
        int h = n.dim(2);
        int rows = b * s;
        MlxArray x = ops.reshape(n, rows, h);
        // 1–2. router logits, softmax in f32 (spec §12.3)
        MlxArray logits = ops.astype(router.apply(ops, x), MlxC.MLX_FLOAT32);
        MlxArray p = ops.exp(ops.subtract(logits, ops.logsumexp(logits, -1, true)));
        MlxArray slotted; // [rows, K, H]: each slot's expert output, unweighted
        MlxArray w;       // [rows, K] weights
        Choices choices;
        if (path == Path.GATHER) {
            // 3–4. top-k (lower index first on equal probability) and the weights, on the device
            MlxOps.TopK top = ops.topK(p, topK);
            w = ops.takeAlong(p, top.indices(), -1);
            if (renormalise) {
                w = ops.divide(w, ops.sum(w, -1, true));
            }
            // 5. every slot's expert on its row: [rows, 1, 1, H] → [rows, K, 1, I] → [rows, K, 1, H]
            MlxArray xe = ops.reshape(x, rows, 1, 1, h);
            MlxArray gt = gateS.apply(ops, xe, top);
            MlxArray act = ops.multiply(ops.multiply(gt, ops.sigmoid(gt)), upS.apply(ops, xe, top));
            slotted = ops.reshape(downS.apply(ops, act, top), rows, topK, h);
            choices = new Choices(null, top.indices(), rows, topK);
        } else {
            int[][] chosen = new int[rows][];
            float[] weights = hostRouting(ops.toFloats(p), rows, chosen);
            slotted = perExpert(ops, x, chosen, rows, h);
            w = ops.fromFloats(weights, rows, topK);
            choices = new Choices(chosen, null, rows, topK);
        }
        // 6. routed = Σ_j w_j · y_j over slots
        w = ops.reshape(w, rows, topK, 1);
        if (dtype != MlxC.MLX_FLOAT32) {
            w = ops.astype(w, dtype);
        }
        MlxArray routed = ops.sum(ops.multiply(slotted, w), 1, false);
        // 7–8. the shared expert, gated by σ(n · W_gateᵀ), one scalar per row
        MlxArray shared = swiglu(ops, sGate, sUp, sDown, x);
        MlxArray g = ops.sigmoid(sharedGate.apply(ops, x));
        return new Routed(ops.reshape(ops.add(routed, ops.multiply(g, shared)), b, s, h), choices);
    }

    /** Top-k with the spec's tie rule and the weights, on the host; fills {@code chosen[r]}, returns {@code [rows·K]}. */
    private float[] hostRouting(float[] p, int rows, int[][] chosen) {
        float[] weights = new float[rows * topK];
        for (int r = 0; r < rows; r++) {
            chosen[r] = topK(p, r * experts, experts);
            float sum = 0f;
            for (int j = 0; j < topK; j++) {
                weights[r * topK + j] = p[r * experts + chosen[r][j]];
                sum += weights[r * topK + j];
            }
            for (int j = 0; renormalise && j < topK; j++) {
                weights[r * topK + j] = weights[r * topK + j] / sum;
            }
        }
        return weights;
    }

    /** Each chosen expert once over its rows; the outputs put back in slot order, {@code [rows, K, H]}. */
    private MlxArray perExpert(MlxOps ops, MlxArray x, int[][] chosen, int rows, int h) {
        List<List<Integer>> slotsOf = new ArrayList<>();
        for (int i = 0; i < experts; i++) {
            slotsOf.add(new ArrayList<>());
        }
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < topK; j++) {
                slotsOf.get(chosen[r][j]).add(r * topK + j);
            }
        }
        List<MlxArray> outs = new ArrayList<>();
        int[] where = new int[rows * topK]; // slot → row of the concatenation
        int at = 0;
        for (int i = 0; i < experts; i++) {
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
        return ops.reshape(ops.take(all, ops.fromInts(where, where.length), 0), rows, topK, h);
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

    /**
     * One projection of every routed expert stacked {@code [E, …]}: dense ({@code weight [E, in, out]}, a transposed
     * view of the stacked {@code [E, out, in]}) or MLX affine codes {@code [E, out, in·bits/32]} with scales and biases
     * {@code [E, out, in/group]}; on the CPU ({@code f32}) the dense weights and the scales and biases are f32.
     * Owns its arrays.
     */
    private record Stacked(MlxArray table, MlxArray weight, MlxArray codes, MlxArray scales, MlxArray biases,
                           int groupSize, int bits) implements AutoCloseable {

        /** Uploads the experts' {@code ws} (one format, checked by the caller) one projection at a time. */
        static Stacked upload(MlxOps ops, List<LinearWeight> ws, int computeDtype, boolean f32) {
            int storeDtype = f32 ? MlxC.MLX_FLOAT32 : computeDtype;
            if (ws.getFirst() instanceof LinearWeight.Affine first) {
                int scaleDtype = storeDtype;
                MlxArray codes = stack(ops, ws, w -> ops.fromHost(((LinearWeight.Affine) w).codes()), -1);
                MlxArray scales = stack(ops, ws, w -> ops.fromHost(((LinearWeight.Affine) w).scales()), scaleDtype);
                MlxArray biases = first.biases() == null ? null
                        : stack(ops, ws, w -> ops.fromHost(((LinearWeight.Affine) w).biases()), scaleDtype);
                return new Stacked(null, null, codes, scales, biases, first.groupSize(), first.bits());
            }
            MlxArray table = stack(ops, ws, w -> ops.fromHost(((LinearWeight.Dense) w).weight()), storeDtype);
            MlxArray weight = ops.transpose(table, 0, 2, 1);
            ops.eval(weight);
            return new Stacked(table, ops.scope().release(weight), null, null, null, 0, 0);
        }

        /** Each expert uploaded (and cast to {@code dtype} unless −1), stacked and evaluated; the parts freed. */
        private static MlxArray stack(MlxOps ops, List<LinearWeight> ws,
                                      java.util.function.Function<LinearWeight, MlxArray> up, int dtype) {
            List<MlxArray> made = new ArrayList<>();
            List<MlxArray> parts = new ArrayList<>();
            try {
                for (LinearWeight w : ws) {
                    MlxArray a = up.apply(w);
                    made.add(a);
                    if (dtype >= 0 && a.dtype() != dtype) {
                        a = ops.astype(a, dtype);
                        made.add(a);
                    }
                    parts.add(a);
                }
                MlxArray s = ops.stack(parts);
                ops.eval(s);
                return ops.scope().release(s);
            } finally {
                made.forEach(MlxArray::close);
            }
        }

        /** {@code x [N, 1 or K, 1, in] → [N, K, 1, out]} for the experts {@code top} chose. */
        MlxArray apply(MlxOps ops, MlxArray x, MlxOps.TopK top) {
            int xt = x.dtype();
            int st = weight != null ? weight.dtype() : scales.dtype();
            MlxArray in = xt == st ? x : ops.astype(x, st);
            MlxArray y = weight != null ? ops.gatherMm(in, weight, top)
                    : ops.gatherQmm(in, codes, scales, biases, top, groupSize, bits);
            return xt == st ? y : ops.astype(y, xt);
        }

        @Override
        public void close() {
            for (MlxArray a : new MlxArray[] {weight, table, codes, scales, biases}) {
                if (a != null) {
                    a.close();
                }
            }
        }
    }

    @Override
    public void close() {
        for (MlxLinear l : List.of(router, sharedGate, sGate, sUp, sDown)) {
            l.close();
        }
        if (path == Path.GATHER) {
            gateS.close();
            upS.close();
            downS.close();
            return;
        }
        for (int i = 0; i < gate.length; i++) {
            gate[i].close();
            up[i].close();
            down[i].close();
        }
    }
}
