package org.mtporacle.io;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.UntrustedText;

/**
 * The load-time check that finite weights cannot overflow f32 in the block (spec §1.5), whatever the inputs: the
 * worst case of every intermediate is bounded from the largest magnitude {@code M} of each weight and the shapes, and
 * must stay below {@link #LIMIT}. It uses three facts: an RMSNorm output {@code y = x·(mean(x²)+ε)^-½·g} has
 * {@code Σ|y_i| ≤ n·M(g)} (Cauchy–Schwarz), whatever {@code x} is; a linear output has {@code |y_j| ≤ M(W)·Σ|x_i|},
 * every partial sum included; attention's output is a convex combination of cached values, and
 * {@code |z·σ(z)| ≤ |z|}. Each RMSNorm input must also keep {@code n·max|x|²} (its f32 sum of squares) below the
 * limit. A single weight of 3.4e38 fails here, naming the tensor, instead of turning the cached keys into NaN and
 * surfacing as a backend divergence. Real models pass by tens of orders of magnitude. The inputs themselves (the
 * caller's hidden states) are the caller's: the contract checks only that they are finite.
 */
final class BlockBounds {
    /** Half of f32's largest finite value: the factor 2 covers rounding in the f32 sums the bound is exact for. */
    static final double LIMIT = Float.MAX_VALUE / 2.0;

    private static final VectorSpecies<Short> S = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private BlockBounds() {
    }

    /**
     * Refuses weights for which some intermediate of the block could exceed {@link #LIMIT}.
     *
     * @throws MtpException INCOMPATIBLE_MODEL naming the step, its worst-case magnitude and the weight that drives it
     */
    static void require(MtpConfig c, MtpWeights w, Path dir) {
        double h = c.hiddenSize();
        double d = c.headDim();
        String in = dir == null ? "" : " in " + UntrustedText.path(dir);
        // 1–3. e = a row of the embedding, RMSNorm(e), RMSNorm(Hin), x = fc · concat
        double e = max(w.embedding());
        sumOfSquares("the embedding rows", h, e, "embedding", in);
        double x = max(w.fc()) * h * (max(w.preFcNormEmbedding()) + max(w.preFcNormHidden()));
        check("fc output x", x, "fc", in);
        sumOfSquares("x", h, x, "fc", in);
        // 5. a = RMSNorm(x); q/gate, k, v projections; per-head RMSNorm of q and k
        double a = h * max(w.inputNorm());
        double qg = max(w.qProj()) * a;
        check("q_proj output", qg, "layers.0.self_attn.q_proj", in);
        sumOfSquares("q", d, qg, "layers.0.self_attn.q_proj", in);
        double k = max(w.kProj()) * a;
        check("k_proj output", k, "layers.0.self_attn.k_proj", in);
        sumOfSquares("k", d, k, "layers.0.self_attn.k_proj", in);
        // RoPE at most doubles a coordinate; scores are D^-½ · q·k
        double score = 2 * d * max(w.qNorm()) * 2 * Math.sqrt(d) * max(w.kNorm()) / Math.sqrt(d);
        check("attention score", score, "layers.0.self_attn.q_norm/k_norm", in);
        double v = max(w.vProj()) * a;
        check("v_proj output", v, "layers.0.self_attn.v_proj", in);
        // 7. h1 = x + o_proj(σ(gate) ⊙ attention), attention a convex combination of v
        double r = max(w.oProj()) * c.numHeads() * d * v;
        check("o_proj output", r, "layers.0.self_attn.o_proj", in);
        double h1 = x + r;
        check("h1 = x + attention", h1, "layers.0.self_attn.o_proj", in);
        sumOfSquares("h1", h, h1, "layers.0.self_attn.o_proj", in);
        // 8–9. y = h1 + down(silu(gate(n)) ⊙ up(n)), n = RMSNorm(h1)
        double n = h * max(w.postAttentionNorm());
        double mlp = switch (w.mlp()) {
            case MlpWeights.Dense dense -> swiGlu(dense, n, "layers.0.mlp", in);
            case MlpWeights.Moe moe -> {
                // routing weights are probabilities (Σ ≤ 1) and σ(gate) ≤ 1: the worst expert plus the shared one
                check("router logits", max(moe.router()) * n, "layers.0.mlp.gate", in);
                double worst = 0;
                for (int j = 0; j < moe.experts().size(); j++) {
                    worst = Math.max(worst, swiGlu(moe.experts().get(j), n, "layers.0.mlp.experts." + j, in));
                }
                yield worst + swiGlu(moe.sharedExpert(), n, "layers.0.mlp.shared_expert", in);
            }
        };
        double y = h1 + mlp;
        check("y = h1 + MLP", y, "layers.0.mlp.down_proj", in);
        sumOfSquares("y", h, y, "layers.0.mlp.down_proj", in);
        // 10. Y = RMSNorm(y); logits = head · Y, and their differences in log-softmax
        double logits = max(w.head()) * h * max(w.finalNorm());
        check("logits (twice, for log-softmax differences)", 2 * logits, "head", in);
    }

    /** The worst |output| of {@code down(silu(gate(n)) ⊙ up(n))} for an input of L1 norm {@code n}. */
    private static double swiGlu(MlpWeights.Dense m, double n, String name, String in) {
        double g = max(m.gateProj()) * n;
        double u = max(m.upProj()) * n;
        check("gate_proj output", g, name + ".gate_proj", in);
        check("up_proj output", u, name + ".up_proj", in);
        double act = g * u;
        check("silu(gate) ⊙ up", act, name + ".gate_proj/up_proj", in);
        double out = max(m.downProj()) * m.width() * act;
        check("down_proj output", out, name + ".down_proj", in);
        return out;
    }

    private static void check(String what, double bound, String weight, String in) {
        if (!(bound <= LIMIT)) {
            throw MtpException.incompatibleModel("load: the weights let " + what + " reach " + String.format("%.3g",
                    bound) + " in the worst case, beyond the f32 bound " + String.format("%.3g", LIMIT) + " (driven by "
                    + weight + in + "); finite weights that overflow the block's f32 arithmetic are refused like NaN "
                    + "(spec §1.2)");
        }
    }

    private static void sumOfSquares(String what, double n, double bound, String weight, String in) {
        check("the RMSNorm sum of squares of " + what, n * bound * bound, weight, in);
    }

    /** The largest magnitude a linear weight dequantizes to (affine: max|scale|·(2^bits − 1) + max|bias|). */
    static double max(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense dense -> maxAbs(dense.weight());
            case LinearWeight.Affine q -> maxAbs(q.scales()) * ((1 << q.bits()) - 1)
                    + (q.biases() == null ? 0 : maxAbs(q.biases()));
        };
    }

    static double max(float[] v) {
        double m = 0;
        for (float f : v) {
            m = Math.max(m, Math.abs(f));
        }
        return m;
    }

    /**
     * The largest magnitude in a float tensor, from the bit patterns: for IEEE formats the magnitude bits order like
     * the values, so one vector max over {@code bits & 0x7FFF…} finds it. Non-finite values were refused before.
     */
    static double maxAbs(HostTensor t) {
        MemorySegment seg = t.data();
        long n = t.elementCount();
        return switch (t.dtype()) {
            case BF16 -> Float.intBitsToFloat(max16(seg, n) << 16);
            case F16 -> Float.float16ToFloat((short) max16(seg, n));
            case F32 -> Float.intBitsToFloat(max32(seg, n));
            default -> {
                double m = 0;
                for (long i = 0; i < n; i++) {
                    m = Math.max(m, Math.abs(t.getDouble(i)));
                }
                yield m;
            }
        };
    }

    private static int max16(MemorySegment d, long n) {
        long i = 0;
        ShortVector acc = ShortVector.zero(S);
        for (long end = n - n % S.length(); i < end; i += S.length()) {
            acc = acc.max(ShortVector.fromMemorySegment(S, d, 2 * i, ByteOrder.LITTLE_ENDIAN).and((short) 0x7FFF));
        }
        int m = acc.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            m = Math.max(m, d.getAtIndex(U16, i) & 0x7FFF);
        }
        return m;
    }

    private static int max32(MemorySegment d, long n) {
        long i = 0;
        IntVector acc = IntVector.zero(I);
        for (long end = n - n % I.length(); i < end; i += I.length()) {
            acc = acc.max(IntVector.fromMemorySegment(I, d, 4 * i, ByteOrder.LITTLE_ENDIAN).and(0x7FFFFFFF));
        }
        int m = acc.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            m = Math.max(m, d.getAtIndex(U32, i) & 0x7FFFFFFF);
        }
        return m;
    }
}
