package org.mtporacle.reference.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpWeights;

/**
 * The verbs the reference block is built from, in one mode, with a fixed thread count. Activations are {@code float[]}
 * with explicit offsets; weights are {@link LinearWeight}s (dense F32/F16/BF16 or MLX affine).
 *
 * <p>Determinism: every verb has a fixed accumulation order for a given mode and vector species (documented on each
 * kernel class); threads split output rows (value heads for the delta rule) in contiguous chunks, never one dot
 * product, so results are bit-identical across runs and thread counts. The pool is owned by this instance; {@link #close()} shuts it down.
 */
public final class Kernels implements AutoCloseable {
    /** Tokens per chunk of {@link #deltaRuleChunked}, transformers' {@code chunk_size} (spec §13.2). */
    public static final int CHUNK = ChunkedDeltaRule.CHUNK;

    /** Below this many multiply-adds a matmul or delta rule runs on the calling thread (same bits either way). */
    private static final long PARALLEL_MIN_MACS = 1L << 16;

    private final KernelMode mode;
    private final int threads;
    private final ExecutorService pool;

    public Kernels(KernelMode mode, int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("kernels: threads = " + threads + " must be ≥ 1");
        }
        this.mode = mode;
        this.threads = threads;
        this.pool = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
            Thread t = new Thread(r, "mtp-kernels");
            t.setDaemon(true);
            return t;
        });
    }

    public KernelMode mode() {
        return mode;
    }

    public int threads() {
        return threads;
    }

    /** For reports: mode, species and threads, e.g. {@code "vector, FloatVector 512-bit, 16 lanes, 2 thread(s)"}. */
    public String describe() {
        return mode.name().toLowerCase() + ", " + LaneSum.describe() + ", " + threads + " thread(s)";
    }

    /** {@code out[r, o] = Σ_i x[r, i] · W[o, i]} for {@code r < rows}: x {@code [rows, in]}, out {@code [rows, out]}. */
    public void matmul(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int rows) {
        int outF = w.outFeatures();
        long macs = (long) outF * w.inFeatures() * rows;
        int parts = macs < PARALLEL_MIN_MACS ? 1 : Math.min(threads, outF);
        parallel(parts, outF, (from, to) -> {
            if (rows == 1) {
                if (mode == KernelMode.SCALAR) {
                    MatVec.scalar(out, outOff, w, x, xOff, from, to);
                } else {
                    MatVec.vector(out, outOff, w, x, xOff, from, to);
                }
            } else if (mode == KernelMode.SCALAR) {
                MatMul.scalar(out, outOff, w, x, xOff, rows, from, to);
            } else {
                MatMul.vector(out, outOff, w, x, xOff, rows, from, to);
            }
        });
    }

    /** {@code out = x · (mean(x²) + ε)^-½ · gain} per row of length {@code n}, for {@code rows} rows (spec §1.6). */
    public void rmsNorm(float[] out, int outOff, float[] x, int xOff, float[] gain, int n, int rows, double eps) {
        if (mode == KernelMode.SCALAR) {
            RmsNorm.scalar(out, outOff, x, xOff, gain, n, rows, eps);
        } else {
            RmsNorm.vector(out, outOff, x, xOff, gain, n, rows, eps);
        }
    }

    /**
     * Rotates the first {@code rotaryDims} features of one head vector at {@code off} in place, half-split layout
     * (spec §1.5 step 5): pairs {@code (f, f+R/2)}, {@code ω_f = θ^(−2f/R)}, angle {@code position · ω_f}.
     */
    public void rope(float[] x, int off, int rotaryDims, double theta, int position) {
        if (mode == KernelMode.SCALAR) {
            Rope.scalar(x, off, rotaryDims, theta, position);
        } else {
            Rope.vector(x, off, rotaryDims, theta, position);
        }
    }

    /** {@code out[0, in) = table[token, :]} dequantized to f32 (spec §1.7). */
    public void embed(float[] out, int outOff, LinearWeight table, int token) {
        if (mode == KernelMode.SCALAR) {
            Embedding.scalar(out, outOff, table, token);
        } else {
            Embedding.vector(out, outOff, table, token);
        }
    }

    /** {@code Σ a[i]·b[i]} over {@code n} elements. */
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        return mode == KernelMode.SCALAR ? Dot.scalar(a, aOff, b, bOff, n) : Dot.vector(a, aOff, b, bOff, n);
    }

    /** {@code out[i] = logits[i] − logsumexp(logits)} over {@code n} elements (spec §1.7). */
    public void logSoftmax(float[] out, int outOff, float[] logits, int off, int n) {
        if (mode == KernelMode.SCALAR) {
            LogSoftmax.scalar(out, outOff, logits, off, n);
        } else {
            LogSoftmax.vector(out, outOff, logits, off, n);
        }
    }

    /**
     * The MoE router's choice for one token (spec §12.3): {@code probs[pOff, pOff+n) = softmax(logits[off, off+n))}
     * in f32, {@code experts[0, k)} the {@code k} most probable in descending order (lower index first on equal
     * probability), {@code weights[0, k)} their probabilities, renormalised to sum 1 when {@code renormalise}. One
     * definition in both modes.
     */
    public void route(float[] probs, int pOff, int[] experts, float[] weights, float[] logits, int off, int n, int k,
                      boolean renormalise) {
        Router.route(probs, pOff, experts, weights, logits, off, n, k, renormalise);
    }

    /**
     * The weights of the experts {@code experts[0, k)} under {@code probs[pOff, pOff+E)}: their probabilities,
     * renormalised to sum 1 when {@code renormalise} (spec §12.3 step 4), the arithmetic of {@link #route}.
     */
    public void routeWeights(float[] weights, float[] probs, int pOff, int[] experts, int k, boolean renormalise) {
        Router.weights(weights, probs, pOff, experts, k, renormalise);
    }

    /** The index of the largest of {@code n} values, the first on ties. */
    public int argmax(float[] v, int off, int n) {
        return LogSoftmax.argmax(v, off, n);
    }

    /**
     * {@code o[oOff, oOff + D) = Σ_j p_j · V[j]}, {@code p = softmax_j(q·K[j] · scale)} over {@code visible} keys
     * (spec §1.5 step 7): {@code q} one head at {@code qOff}; {@code keys}, {@code values} {@code [visible, D]};
     * {@code p[0, visible)} receives the probabilities.
     */
    public void attention(float[] o, int oOff, float[] p, float[] q, int qOff, float[] keys, float[] values, int d,
                          int visible, float scale) {
        if (mode == KernelMode.SCALAR) {
            Attention.scalar(o, oOff, p, q, qOff, keys, values, d, visible, scale);
        } else {
            Attention.vector(o, oOff, p, q, qOff, keys, values, d, visible, scale);
        }
    }

    /** {@code out[i] = silu(z[i]) · m[i]} ({@code m} null means 1; spec §1.4 step 8). */
    public void silu(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        if (mode == KernelMode.SCALAR) {
            Activations.siluScalar(out, outOff, z, zOff, m, mOff, n);
        } else {
            Activations.siluVector(out, outOff, z, zOff, m, mOff, n);
        }
    }

    /** {@code out[i] = σ(z[i]) · m[i]} ({@code m} null means 1; spec §1.5 step 8). */
    public void sigmoid(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        if (mode == KernelMode.SCALAR) {
            Activations.sigmoidScalar(out, outOff, z, zOff, m, mOff, n);
        } else {
            Activations.sigmoidVector(out, outOff, z, zOff, m, mOff, n);
        }
    }

    /**
     * The Gated DeltaNet's depthwise causal conv then SiLU over {@code steps} tokens (spec §13.2): {@code out[t, c] =
     * silu(Σ_{j<K} W[c, j] · u[c, t−(K−1)+j])}, {@code u} the window followed by {@code x}. x (raw {@code q|k|v}) and
     * out {@code [steps, C]}; window {@code [C, K−1]}, the raw inputs before {@code x[0]}, oldest first (zeros at a
     * sequence start), not modified; weight {@code [C, K]}, column {@code K−1} on the current token. {@code out} must
     * not overlap {@code x} or the window.
     */
    public void causalConv(float[] out, int outOff, float[] x, int xOff, float[] window, int winOff, float[] weight,
                           int channels, int taps, int steps) {
        if (mode == KernelMode.SCALAR) {
            CausalConv.scalar(out, outOff, x, xOff, window, winOff, weight, channels, taps, steps);
        } else {
            CausalConv.vector(out, outOff, x, xOff, window, winOff, weight, channels, taps, steps);
        }
    }

    /**
     * {@code next [C, K−1]} = the last {@code K−1} raw inputs of the window followed by {@code x[0, steps)}, oldest
     * first: the conv window after those tokens (spec §13.2). {@code next} must not overlap {@code window} unless
     * {@code steps == 0} or it is the window itself at the same offset (an update in place).
     *
     * @throws IllegalArgumentException when {@code next} overlaps {@code window} otherwise
     */
    public static void convWindow(float[] next, int nextOff, float[] window, int winOff, float[] x, int xOff,
                                  int channels, int taps, int steps) {
        int len = channels * (taps - 1);
        if (next == window && steps > 0 && nextOff != winOff && nextOff < winOff + len && winOff < nextOff + len) {
            throw new IllegalArgumentException("convWindow: next at " + nextOff + " overlaps the window at " + winOff
                    + " (" + len + " floats each) (spec §13.2)");
        }
        CausalConv.window(next, nextOff, window, winOff, x, xOff, channels, taps, steps);
    }

    /**
     * {@code out = x · (Σx² + 10⁻⁶)^-½ · scale} per row of {@code n}, ε inside the root (transformers' {@code l2norm};
     * spec §13.2): {@code q̂ = l2norm(q)·Dk^-½}, {@code k̂ = l2norm(k)}.
     */
    public void l2Norm(float[] out, int outOff, float[] x, int xOff, int n, int rows, float scale) {
        if (mode == KernelMode.SCALAR) {
            L2Norm.scalar(out, outOff, x, xOff, n, rows, scale);
        } else {
            L2Norm.vector(out, outOff, x, xOff, n, rows, scale);
        }
    }

    /**
     * The gates of {@code hv} value heads (spec §13.2): {@code β[h] = σ(b[h])}, {@code g[h] = −exp(A_log[h]) ·
     * softplus(a[h] + dt_bias[h])} (torch's softplus, threshold 20); f64 inside, f32 out. One definition in both modes.
     */
    public void gdnGates(float[] g, int gOff, float[] beta, int betaOff, float[] a, int aOff, float[] b, int bOff,
                         float[] aLog, float[] dtBias, int hv) {
        GdnGates.gates(g, gOff, beta, betaOff, a, aOff, b, bOff, aLog, dtBias, hv);
    }

    /**
     * One token of the gated delta rule, every value head (spec §13.2): {@code S ← e^g S; m = Sᵀk̂; S ← S + k̂(β(v −
     * m))ᵀ; out = Sᵀq̂}, value head {@code h} on key head {@code h / (hv/hk)}. State {@code [Hv, Dk, Dv]} updated in
     * place; q, k {@code [Hk, Dk]} (q̂ scaled, k̂ normalised); v, out {@code [Hv, Dv]}; g, β {@code [Hv]}. Threads
     * split value heads; the modes agree bit for bit.
     *
     * @throws IllegalArgumentException when {@code hv} is not a positive multiple of {@code hk}
     */
    public void deltaRuleStep(float[] out, int outOff, float[] state, int stateOff, float[] q, int qOff, float[] k,
                              int kOff, float[] v, int vOff, float[] g, int gOff, float[] beta, int betaOff, int hk,
                              int hv, int dk, int dv) {
        deltaRuleStep(out, outOff, state, stateOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta, betaOff,
                hk, hv, dk, dv);
    }

    /**
     * {@link #deltaRuleStep(float[], int, float[], int, float[], int, float[], int, float[], int, float[], int, float[],
     * int, int, int, int, int) deltaRuleStep} from {@code state} (only read) into {@code next}: the bits of copying
     * {@code state} to {@code next} and stepping there in place, without the copy (a verify keeps the state after
     * every token, spec §13.3). {@code next} is {@code state} at the same offset (in place) or disjoint from it.
     *
     * @throws IllegalArgumentException when {@code hv} is not a positive multiple of {@code hk}, or {@code next}
     *                                  partly overlaps {@code state}
     */
    public void deltaRuleStep(float[] out, int outOff, float[] next, int nextOff, float[] state, int stateOff,
                              float[] q, int qOff, float[] k, int kOff, float[] v, int vOff, float[] g, int gOff,
                              float[] beta, int betaOff, int hk, int hv, int dk, int dv) {
        checkHeads("deltaRuleStep", hk, hv);
        int len = hv * dk * dv;
        if (next == state && nextOff != stateOff && nextOff < stateOff + len && stateOff < nextOff + len) {
            throw new IllegalArgumentException("deltaRuleStep: next at " + nextOff + " overlaps the state at "
                    + stateOff + " (" + len + " floats each) (spec §13.2)");
        }
        parallel(parts(4L * hv * dk * dv, hv), hv, (from, to) -> {
            if (mode == KernelMode.SCALAR) {
                DeltaRule.scalar(out, outOff, next, nextOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta,
                        betaOff, hk, hv, dk, dv, from, to);
            } else {
                DeltaRule.vector(out, outOff, next, nextOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta,
                        betaOff, hk, hv, dk, dv, from, to);
            }
        });
    }

    /**
     * The gated delta rule over {@code tokens} tokens in chunks of {@link #CHUNK}, transformers' chunked form (spec
     * §13.2): equal to that many {@link #deltaRuleStep}s up to f32 reassociation. q, k {@code [T, Hk, Dk]}; v, out
     * {@code [T, Hv, Dv]}; g, β {@code [T, Hv]}; state {@code [Hv, Dk, Dv]} in and out. Threads split value heads;
     * the modes agree bit for bit.
     *
     * @throws IllegalArgumentException when {@code hv} is not a positive multiple of {@code hk}
     */
    public void deltaRuleChunked(float[] out, int outOff, float[] state, int stateOff, float[] q, int qOff, float[] k,
                                 int kOff, float[] v, int vOff, float[] g, int gOff, float[] beta, int betaOff,
                                 int tokens, int hk, int hv, int dk, int dv) {
        checkHeads("deltaRuleChunked", hk, hv);
        parallel(parts(6L * tokens * hv * dk * dv, hv), hv, (from, to) -> {
            if (mode == KernelMode.SCALAR) {
                ChunkedDeltaRule.scalar(out, outOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta,
                        betaOff, tokens, hk, hv, dk, dv, from, to);
            } else {
                ChunkedDeltaRule.vector(out, outOff, state, stateOff, q, qOff, k, kOff, v, vOff, g, gOff, beta,
                        betaOff, tokens, hk, hv, dk, dv, from, to);
            }
        });
    }

    /**
     * The Gated DeltaNet's output norm per row of {@code n} (one value head over {@code Dv}; spec §13.2): {@code out =
     * gain ⊙ x·(mean(x²) + ε)^-½ ⊙ silu(z)} with the plain gain (not {@code 1 + w}).
     */
    public void gatedRmsNorm(float[] out, int outOff, float[] x, int xOff, float[] z, int zOff, float[] gain, int n,
                             int rows, double eps) {
        if (mode == KernelMode.SCALAR) {
            GatedRmsNorm.scalar(out, outOff, x, xOff, z, zOff, gain, n, rows, eps);
        } else {
            GatedRmsNorm.vector(out, outOff, x, xOff, z, zOff, gain, n, rows, eps);
        }
    }

    /**
     * {@code w} with its tensors in native memory: itself when they already are (a mapped file, an arena), otherwise
     * a copy of the bytes in memory the garbage collector frees with it. The Vector API reads heap-backed segments
     * through a slow path (a BF16 mat-vec on a {@code byte[]}-backed tensor runs about 14× slower), so components
     * that multiply by in-memory weights call this once when they are built.
     */
    public static LinearWeight offHeap(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> d.weight().data().isNative() ? d : new LinearWeight.Dense(offHeap(d.weight()));
            case LinearWeight.Affine a -> a.codes().data().isNative() && a.scales().data().isNative()
                    && (a.biases() == null || a.biases().data().isNative()) ? a
                    : new LinearWeight.Affine(offHeap(a.codes()), offHeap(a.scales()),
                            a.biases() == null ? null : offHeap(a.biases()), a.bits(), a.groupSize());
        };
    }

    /** {@link #offHeap(LinearWeight)} for every linear of {@code w} (norm gains are float arrays already). */
    public static MtpWeights offHeap(MtpWeights w) {
        LinearWeight embedding = offHeap(w.embedding());
        LinearWeight head = w.head() == w.embedding() ? embedding : offHeap(w.head()); // a tied head stays tied
        return new MtpWeights(offHeap(w.fc()), w.preFcNormEmbedding(), w.preFcNormHidden(), w.inputNorm(),
                offHeap(w.qProj()), offHeap(w.kProj()), offHeap(w.vProj()), offHeap(w.oProj()), w.qNorm(), w.kNorm(),
                w.postAttentionNorm(), offHeap(w.mlp()), w.finalNorm(), embedding, head);
    }

    /** {@link #offHeap(LinearWeight)} for every linear of a dense or MoE MLP. */
    public static MlpWeights offHeap(MlpWeights mlp) {
        return switch (mlp) {
            case MlpWeights.Dense d -> offHeap(d);
            case MlpWeights.Moe m -> new MlpWeights.Moe(offHeap(m.router()), m.experts().stream()
                    .map(Kernels::offHeap).toList(), offHeap(m.sharedExpert()), offHeap(m.sharedExpertGate()),
                    m.topK(), m.normTopK());
        };
    }

    private static MlpWeights.Dense offHeap(MlpWeights.Dense d) {
        return new MlpWeights.Dense(offHeap(d.gateProj()), offHeap(d.upProj()), offHeap(d.downProj()));
    }

    private static HostTensor offHeap(HostTensor t) {
        if (t.data().isNative()) {
            return t;
        }
        MemorySegment seg = Arena.ofAuto().allocate(t.data().byteSize(), 64);
        seg.copyFrom(t.data());
        return HostTensor.view(t.dtype(), t.shape(), seg);
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    /** How many parts a job of {@code macs} multiply-adds over {@code n} independent items runs in. */
    private int parts(long macs, int n) {
        return macs < PARALLEL_MIN_MACS ? 1 : Math.min(threads, n);
    }

    private static void checkHeads(String op, int hk, int hv) {
        if (hk < 1 || hv < 1 || hv % hk != 0) {
            throw new IllegalArgumentException(op + ": hv = " + hv + " value heads is not a positive multiple of hk = "
                    + hk + " key heads (spec §13.2)");
        }
    }

    private interface RowRange {
        void run(int from, int to);
    }

    /** Runs {@code body} on {@code parts} contiguous chunks of {@code [0, n)}; chunk 0 on the calling thread. */
    private void parallel(int parts, int n, RowRange body) {
        if (parts <= 1) {
            body.run(0, n);
            return;
        }
        List<Future<?>> futures = new ArrayList<>(parts - 1);
        for (int p = 1; p < parts; p++) {
            int from = (int) ((long) n * p / parts);
            int to = (int) ((long) n * (p + 1) / parts);
            futures.add(pool.submit(() -> body.run(from, to)));
        }
        body.run(0, (int) ((long) n / parts));
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("kernels: interrupted while waiting for a worker", e);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof RuntimeException re ? re
                        : new IllegalStateException("kernels: worker failed", e.getCause());
            }
        }
    }
}
