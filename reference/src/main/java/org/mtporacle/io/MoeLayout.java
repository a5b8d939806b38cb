package org.mtporacle.io;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpException;

/**
 * Reads a MoE MLP (spec §12.2) in the three layouts checkpoints use, into per-expert linears that view the stored
 * bytes (no copy). Paths below are the MTP layer's ({@code layers.0.mlp.}); a target layer's MLP is read the same way
 * under its own path ({@code model.language_model.layers.i.mlp.}, spec §13.1):
 * <ul>
 *   <li><b>per-expert</b>: {@code layers.0.mlp.experts.{e}.gate_proj.weight} {@code [I, H]}, {@code up_proj},
 *   {@code down_proj} {@code [H, I]}, each dense or MLX affine with its own {@code .scales}/{@code .biases} and the
 *   quantization spec of its own module path;</li>
 *   <li><b>fused</b> (Hugging Face): {@code layers.0.mlp.experts.gate_up_proj} {@code [E, 2I, H]} (rows {@code [0, I)}
 *   gate, {@code [I, 2I)} up) and {@code layers.0.mlp.experts.down_proj} {@code [E, H, I]}, dense, no {@code .weight}
 *   suffix;</li>
 *   <li><b>stacked</b> (MLX): {@code layers.0.mlp.switch_mlp.{gate,up,down}_proj.weight} {@code [E, ·, ·]}, dense or
 *   affine with {@code .scales}/{@code .biases} {@code [E, ·, ·]}, one spec for the module path.</li>
 * </ul>
 * All three have the router {@code layers.0.mlp.gate} {@code [E, H]}, the shared expert
 * {@code layers.0.mlp.shared_expert.{gate,up,down}_proj} and {@code layers.0.mlp.shared_expert_gate} {@code [1, H]}.
 */
public final class MoeLayout {
    /** The MTP layer's MLP path (companion-relative). */
    static final String MLP = "layers.0.mlp.";
    private static final String EXPERTS = MLP + "experts.";
    private static final String FUSED_GATE_UP = EXPERTS + "gate_up_proj";
    private static final String FUSED_DOWN = EXPERTS + "down_proj";

    private MoeLayout() {
    }

    /** The layouts, for reports ({@code mtp inspect}). */
    public enum Kind {
        PER_EXPERT("per-expert"), FUSED("fused"), STACKED("stacked");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /** True when companion-relative {@code names} hold any MoE MLP tensor of the MTP layer. */
    static boolean isMoe(Set<String> names) {
        return isMoe(names, MLP);
    }

    /** True when {@code names} hold any MoE MLP tensor under the MLP path {@code mlp} (ending in a dot). */
    static boolean isMoe(Set<String> names, String mlp) {
        return names.stream().anyMatch(n -> n.startsWith(mlp + "experts.") || n.startsWith(mlp + "switch_mlp.")
                || n.startsWith(mlp + "gate.") || n.startsWith(mlp + "shared_expert"));
    }

    /**
     * The layout of companion-relative {@code names}, or null when they hold no MoE MLP.
     *
     * @throws MtpException INCOMPATIBLE_MODEL when more than one layout is present
     */
    public static Kind kind(Set<String> names) {
        return kind(names, MLP);
    }

    /** As {@link #kind(Set)} for the MLP under path {@code mlp} (ending in a dot). */
    static Kind kind(Set<String> names, String mlp) {
        String experts = mlp + "experts.";
        String gateUp = experts + "gate_up_proj";
        String down = experts + "down_proj";
        boolean fused = names.contains(gateUp) || names.contains(down);
        boolean stacked = names.stream().anyMatch(n -> n.startsWith(mlp + "switch_mlp."));
        boolean perExpert = names.stream().anyMatch(n -> n.startsWith(experts) && !n.startsWith(gateUp)
                && !n.startsWith(down));
        int count = (fused ? 1 : 0) + (stacked ? 1 : 0) + (perExpert ? 1 : 0);
        if (count > 1) {
            throw MtpException.incompatibleModel("load: the MoE layer '" + mlp + "' mixes expert layouts (per-expert "
                    + perExpert + ", fused " + fused + ", stacked " + stacked + "); expected exactly one (spec §12.2)");
        }
        return fused ? Kind.FUSED : stacked ? Kind.STACKED : perExpert ? Kind.PER_EXPERT : null;
    }

    /**
     * The MoE MLP of the MTP layer in {@code b}, checked against {@code cfg}'s MoE fields.
     *
     * @throws MtpException INCOMPATIBLE_MODEL for a missing tensor or config field, a shape mismatch or a dense MLP
     *                      beside the experts
     */
    static MlpWeights.Moe load(ModelConfig cfg, ModelLoader.Blocks b) {
        return load(cfg, b, MLP);
    }

    /** As {@link #load(ModelConfig, ModelLoader.Blocks)} for the MLP under path {@code mlp} (ending in a dot). */
    static MlpWeights.Moe load(ModelConfig cfg, ModelLoader.Blocks b, String mlp) {
        String p = b.prefix();
        Set<String> names = b.tensors().keySet();
        if (names.contains(mlp + "gate_proj.weight")) {
            throw MtpException.incompatibleModel("load: '" + p + mlp + "gate_proj.weight' (a dense MLP) sits beside "
                    + "MoE tensors; expected one or the other (spec §12.2)");
        }
        ModelConfig.Moe moe = cfg.moe();
        if (moe == null || moe.numExpertsPerTok() == null) {
            throw MtpException.incompatibleModel("load: the layer is MoE ('" + p + mlp + "gate.weight' …) but "
                    + "the config has no " + (moe == null ? "num_experts" : "num_experts_per_tok") + " (spec §12.1)");
        }
        int h = cfg.hiddenSize();
        Kind kind = kind(names, mlp);
        if (kind == null) {
            throw MtpException.incompatibleModel("load: the MoE layer has no experts: expected '" + p + mlp
                    + "experts.{e}.gate_proj.weight', '" + p + mlp + "experts.gate_up_proj' or '" + p + mlp
                    + "switch_mlp.gate_proj.weight' (spec §12.2)");
        }
        List<MlpWeights.Dense> experts = switch (kind) {
            case PER_EXPERT -> perExpert(b, names, mlp, h);
            case FUSED -> fused(b, mlp, h);
            case STACKED -> stacked(b, mlp, h);
        };
        int e = experts.size();
        if (e != moe.numExperts()) {
            throw MtpException.incompatibleModel("load: " + e + " experts stored (" + kind + "), expected num_experts"
                    + " = " + moe.numExperts() + " from config, under '" + p + mlp + "' (spec §12.1)");
        }
        int width = experts.getFirst().width();
        check(moe.moeIntermediateSize() == null || moe.moeIntermediateSize() == width, "experts are " + width
                + " wide, expected moe_intermediate_size = " + moe.moeIntermediateSize() + " from config");
        LinearWeight router = b.linear(mlp + "gate", e, h);
        MlpWeights.Dense shared = swiglu(b, mlp + "shared_expert.", h);
        int sw = shared.width();
        check(moe.sharedExpertIntermediateSize() == null || moe.sharedExpertIntermediateSize() == sw, "the shared"
                + " expert is " + sw + " wide, expected shared_expert_intermediate_size = "
                + moe.sharedExpertIntermediateSize() + " from config");
        LinearWeight sharedGate = b.linear(mlp + "shared_expert_gate", 1, h);
        check(moe.numExpertsPerTok() >= 1 && moe.numExpertsPerTok() <= e, "num_experts_per_tok = "
                + moe.numExpertsPerTok() + " outside [1, " + e + "]");
        return new MlpWeights.Moe(router, experts, shared, sharedGate, moe.numExpertsPerTok(), moe.normTopkProb());
    }

    private static MlpWeights.Dense swiglu(ModelLoader.Blocks b, String path, int h) {
        int w = b.linear(path + "gate_proj").outFeatures();
        return new MlpWeights.Dense(b.linear(path + "gate_proj", w, h), b.linear(path + "up_proj", w, h),
                b.linear(path + "down_proj", h, w));
    }

    private static List<MlpWeights.Dense> perExpert(ModelLoader.Blocks b, Set<String> names, String mlp, int h) {
        String experts = mlp + "experts.";
        TreeSet<Integer> ids = new TreeSet<>();
        for (String n : names) {
            if (n.startsWith(experts)) {
                String rest = n.substring(experts.length());
                int dot = rest.indexOf('.');
                String id = dot < 0 ? rest : rest.substring(0, dot);
                if (id.isEmpty() || id.length() > 6 || !id.chars().allMatch(Character::isDigit)) {
                    throw MtpException.incompatibleModel("load: tensor '" + b.prefix() + n + "' is not an expert "
                            + "tensor '" + experts + "{e}.{gate,up,down}_proj.*' (spec §12.2)");
                }
                ids.add(Integer.parseInt(id));
            }
        }
        if (ids.first() != 0 || ids.last() != ids.size() - 1) {
            throw MtpException.incompatibleModel("load: expert indices run " + ids.first() + " … " + ids.last()
                    + " over " + ids.size() + " experts under '" + b.prefix() + experts + "'; expected 0 … "
                    + (ids.size() - 1) + " (spec §12.2)");
        }
        List<MlpWeights.Dense> out = new ArrayList<>(ids.size());
        int width = -1;
        for (int e : ids) {
            MlpWeights.Dense d = swiglu(b, experts + e + ".", h);
            if (width >= 0 && d.width() != width) {
                throw MtpException.incompatibleModel("load: expert " + e + " is " + d.width() + " wide, expert 0 is "
                        + width + "; every expert has the same shape (spec §12.2)");
            }
            width = d.width();
            out.add(d);
        }
        return out;
    }

    private static List<MlpWeights.Dense> fused(ModelLoader.Blocks b, String mlp, int h) {
        String experts = mlp + "experts.";
        String gateUpName = experts + "gate_up_proj";
        String downName = experts + "down_proj";
        HostTensor gateUp = b.require(gateUpName);
        HostTensor down = b.require(downName);
        String p = b.prefix();
        if (b.tensors().containsKey(gateUpName + ".scales") || b.tensors().containsKey(downName + ".scales")) {
            throw MtpException.incompatibleModel("load: quantized fused experts ('" + p + gateUpName + ".scales')"
                    + " are not a published layout; quantize per expert or stacked (spec §12.2)");
        }
        if (gateUp.rank() != 3 || gateUp.dim(2) != h || gateUp.dim(1) % 2 != 0 || down.rank() != 3
                || down.dim(0) != gateUp.dim(0) || down.dim(1) != h || down.dim(2) * 2 != gateUp.dim(1)) {
            throw MtpException.incompatibleModel("load: fused experts '" + p + gateUpName + "' "
                    + gateUp.describe() + " and '" + p + downName + "' " + down.describe() + ", expected [E, 2I, "
                    + h + "] and [E, " + h + ", I] (spec §12.2)");
        }
        int e = gateUp.dim(0);
        int i = down.dim(2);
        List<MlpWeights.Dense> out = new ArrayList<>(e);
        for (int x = 0; x < e; x++) {
            HostTensor gu = gateUp.slice0(x, x + 1).reshape(2 * i, h);
            out.add(new MlpWeights.Dense(
                    b.linear(experts + x + ".gate_proj", gu.slice0(0, i), null, null),
                    b.linear(experts + x + ".up_proj", gu.slice0(i, 2 * i), null, null),
                    b.linear(experts + x + ".down_proj", down.slice0(x, x + 1).reshape(h, i), null, null)));
        }
        return out;
    }

    private static List<MlpWeights.Dense> stacked(ModelLoader.Blocks b, String mlp, int h) {
        String sw = mlp + "switch_mlp.";
        HostTensor gate = b.require(sw + "gate_proj.weight");
        int e = gate.rank() == 3 ? gate.dim(0) : -1;
        if (e < 1) {
            throw MtpException.incompatibleModel("load: stacked experts '" + b.prefix() + sw + "gate_proj.weight' "
                    + "is " + gate.describe() + ", expected [E, I, ·] (spec §12.2)");
        }
        List<MlpWeights.Dense> out = new ArrayList<>(e);
        for (int x = 0; x < e; x++) {
            out.add(new MlpWeights.Dense(slice(b, sw, "gate_proj", x, e), slice(b, sw, "up_proj", x, e),
                    slice(b, sw, "down_proj", x, e)));
        }
        int i = out.getFirst().width();
        for (int x = 0; x < e; x++) {
            String name = b.prefix() + sw + "{gate,up,down}_proj[" + x + "]";
            ModelLoader.checkShape(name, out.get(x).gateProj(), i, h, b.section());
            ModelLoader.checkShape(name, out.get(x).upProj(), i, h, b.section());
            ModelLoader.checkShape(name, out.get(x).downProj(), h, i, b.section());
        }
        return out;
    }

    /** Expert {@code x}'s 2-D view of the stacked {@code switch_mlp.<proj>} tensors. */
    private static LinearWeight slice(ModelLoader.Blocks b, String sw, String proj, int x, int e) {
        String path = sw + proj;
        HostTensor w = b.require(path + ".weight");
        HostTensor s = b.tensors().get(path + ".scales");
        HostTensor bias = b.tensors().get(path + ".biases");
        for (HostTensor t : new HostTensor[] {w, s, bias}) {
            if (t != null && (t.rank() != 3 || t.dim(0) != e)) {
                throw MtpException.incompatibleModel("load: stacked '" + b.prefix() + path + "' has a tensor "
                        + t.describe() + ", expected [" + e + ", ·, ·] like gate_proj (spec §12.2)");
            }
        }
        return b.linear(path, expert(w, x), s == null ? null : expert(s, x), bias == null ? null : expert(bias, x));
    }

    private static HostTensor expert(HostTensor stacked, int x) {
        return stacked.slice0(x, x + 1).reshape(stacked.dim(1), stacked.dim(2));
    }

    /**
     * {@code tensors} (companion-relative) with fused experts replaced by per-expert views
     * {@code layers.0.mlp.experts.{e}.{gate,up,down}_proj.weight} (spec §12.2); other layouts unchanged. Order kept.
     */
    static java.util.Map<String, HostTensor> splitFused(java.util.Map<String, HostTensor> tensors) {
        HostTensor gateUp = tensors.get(FUSED_GATE_UP);
        HostTensor down = tensors.get(FUSED_DOWN);
        if (gateUp == null || down == null || gateUp.rank() != 3 || down.rank() != 3) {
            return tensors;
        }
        java.util.Map<String, HostTensor> out = new java.util.LinkedHashMap<>();
        int i = down.dim(2);
        int h = down.dim(1);
        tensors.forEach((n, t) -> {
            if (n.equals(FUSED_GATE_UP)) {
                for (int x = 0; x < t.dim(0); x++) {
                    HostTensor gu = t.slice0(x, x + 1).reshape(2 * i, t.dim(2));
                    out.put(EXPERTS + x + ".gate_proj.weight", gu.slice0(0, i));
                    out.put(EXPERTS + x + ".up_proj.weight", gu.slice0(i, 2 * i));
                    out.put(EXPERTS + x + ".down_proj.weight", down.slice0(x, x + 1).reshape(h, i));
                }
            } else if (!n.equals(FUSED_DOWN)) {
                out.put(n, t);
            }
        });
        return out;
    }

    /** The MoE modules a quantizing conversion keeps dense: the router and the shared-expert gate (spec §12.2). */
    static Set<String> keptDense(Set<String> names) {
        Set<String> keep = new TreeSet<>();
        for (String m : new String[] {MLP + "gate", MLP + "shared_expert_gate"}) {
            if (names.contains(m + ".weight")) {
                keep.add(m);
            }
        }
        return keep;
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw MtpException.incompatibleModel("load: " + message + " (spec §12.1)");
        }
    }
}
