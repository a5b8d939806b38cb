package org.mtporacle.reference;

import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.block.ForwardTrace;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.reference.block.RowKv;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reproduces the external references computed in float64 with Hugging Face transformers' own layer classes (raw HF
 * layout, f32 and bf16 weights): the dense Qwen3.5 block ({@code src/test/data/qwen35-mtp-transformers}) and the
 * Qwen3.5-MoE block with fused experts ({@code src/test/data/qwen35-moe-mtp-transformers}, spec §12). Every
 * intermediate of the block (for MoE also router logits and probabilities, chosen experts, their weights and outputs,
 * the shared expert and its gate), a prefill, a greedy draft round, a rollback and a chunked prefill, through the
 * project's own reader. Shapes come from each set's config.
 */
class ExternalReferenceTest {
    /** f32 arithmetic against float64 values over exactly representable weights and inputs. */
    private static final double NMSE = 1e-10;
    static final Path DATA = Path.of("src/test/data/qwen35-mtp-transformers");
    static final Path MOE_DATA = Path.of("src/test/data/qwen35-moe-mtp-transformers");
    /** The MoE intermediates each forward row carries, by the external set's names (without prefix). */
    private static final String[] MOE_FIELDS = {"router_logits", "router_probs", "topk_weights", "expert_out",
            "routed_out", "shared_act", "shared_out", "shared_gate_logit", "shared_gate", "moe_out"};

    static Stream<Arguments> variants() {
        List<Arguments> out = new ArrayList<>();
        for (Path set : new Path[] {DATA, MOE_DATA}) {
            for (String v : new String[] {"float32", "bfloat16"}) {
                for (KernelMode m : KernelMode.values()) {
                    out.add(Arguments.of(set.getFileName().toString(), v, m));
                }
            }
        }
        return out.stream();
    }

    private record Fixture(MtpModel model, SafetensorsFile expected) {
        boolean moe() {
            return model.weights().isMoe();
        }

        int nH() {
            return model.config().numHeads();
        }

        int nKv() {
            return model.config().numKvHeads();
        }

        int d() {
            return model.config().headDim();
        }

        /** S, the one-shot prefill's rows. */
        int s() {
            return ints("prefill_tokens").length;
        }

        double[] d(String name) {
            return expected.tensor(name).toDoubleArray();
        }

        int[] ints(String name) {
            return expected.tensor(name).toIntArray();
        }

        float[] f(String name) {
            return expected.tensor(name).toFloatArray();
        }
    }

    private static Fixture load(String set, String variant) {
        Path dir = DATA.resolveSibling(set).resolve(variant);
        return new Fixture(ModelLoader.load(dir), SafetensorsFile.open(dir.resolve("inputs-and-expected.safetensors")));
    }

    @ParameterizedTest(name = "{0}, {1}, {2}")
    @MethodSource("variants")
    void everyIntermediateOfTheOneShotPrefillMatches(String set, String variant, KernelMode mode) {
        Fixture fx = load(set, variant);
        MtpModel m = fx.model();
        int h = m.config().hiddenSize();
        int s = fx.s();
        try (Kernels k = new Kernels(mode, 2)) {
            MtpBlock block = new MtpBlock(m.config(), m.weights(), k);
            TargetHead head = new TargetHead(m.weights(), k);
            int[] tokens = fx.ints("prefill_tokens");
            float[] hidden = Arrays.copyOf(fx.f("target_hidden"), s * h);
            float[] e = head.embed(tokens);
            assertThat(F64Block.nmse(e, fx.d("prefill_embed"))).as("E").isLessThan(NMSE);
            ForwardTrace trace = new ForwardTrace();
            RowKv kv = new RowKv(fx.nKv(), fx.d());
            float[] y = block.forward(e, hidden, new RowKv[] {kv}, s, trace);
            int nH = fx.nH();
            int d = fx.d();
            List<String[]> sameLayout = new ArrayList<>(List.of(new String[][] {{"e", "trace_e"}, {"g", "trace_g"},
                    {"x", "trace_x"}, {"attn_in", "trace_attn_in"}, {"q_proj", "trace_q_proj"}, {"gate", "trace_gate"},
                    {"attn_out", "trace_attn_out"}, {"gated", "trace_gated"}, {"attn_proj", "trace_attn_proj"},
                    {"h1", "trace_h1"}, {"mlp_in", "trace_mlp_in"}, {"h2", "trace_h2"}}));
            if (fx.moe()) {
                for (String f : MOE_FIELDS) {
                    sameLayout.add(new String[] {f, "trace_" + f});
                }
                assertThat(ints(trace.get("topk_indices"))).as("%s chosen experts per prefill row", variant)
                        .containsExactly(fx.ints("trace_topk_indices"));
            } else {
                sameLayout.add(new String[] {"mlp_act", "trace_mlp_act"});
                sameLayout.add(new String[] {"mlp_out", "trace_mlp_out"});
            }
            for (String[] pair : sameLayout) {
                assertThat(F64Block.nmse(trace.get(pair[0]), fx.d(pair[1]))).as("%s %s vs %s", variant, pair[0],
                        pair[1]).isLessThan(NMSE);
            }
            // ours [S, heads, D] against theirs [heads, S, D]
            assertThat(F64Block.nmse(trace.get("q_normed"), transpose(fx.d("trace_q_normed"), nH, s, d)))
                    .as("q_normed").isLessThan(NMSE);
            assertThat(F64Block.nmse(trace.get("q_rope"), transpose(fx.d("trace_q_rope"), nH, s, d)))
                    .as("q_rope").isLessThan(NMSE);
            assertThat(F64Block.nmse(trace.get("k_normed"), transpose(fx.d("trace_k_normed"), fx.nKv(), s, d)))
                    .as("k_normed").isLessThan(NMSE);
            assertThat(F64Block.nmse(trace.get("v"), transpose(fx.d("trace_v"), fx.nKv(), s, d))).as("v")
                    .isLessThan(NMSE);
            // attention probabilities: ours [S, nH, T], theirs [nH, S, T]
            assertThat(F64Block.nmse(trace.get("attn_probs"), transpose(fx.d("trace_attn_probs"), nH, s, s)))
                    .as("attn_probs").isLessThan(NMSE);
            assertThat(F64Block.nmse(y, fx.d("prefill_y"))).as("prefill_y").isLessThan(NMSE);
            assertThat(F64Block.nmse(head.logits(y, s), fx.d("prefill_logits"))).as("prefill_logits")
                    .isLessThan(NMSE);
            assertThat(F64Block.nmse(kv.export(true), fx.d("prefill_kv_k"))).as("prefill_kv_k").isLessThan(NMSE);
            assertThat(F64Block.nmse(kv.export(false), fx.d("prefill_kv_v"))).as("prefill_kv_v").isLessThan(NMSE);
        }
    }

    @ParameterizedTest(name = "{0}, {1}, {2}")
    @MethodSource("variants")
    void everyDraftStepOfTheGreedyRoundAndTheRollbackForwardMatch(String set, String variant, KernelMode mode) {
        Fixture fx = load(set, variant);
        MtpModel m = fx.model();
        int h = m.config().hiddenSize();
        int s = fx.s();
        int depth = fx.ints("draft_tokens").length;
        try (Kernels k = new Kernels(mode, 1)) {
            MtpBlock block = new MtpBlock(m.config(), m.weights(), k);
            TargetHead head = new TargetHead(m.weights(), k);
            RowKv kv = new RowKv(fx.nKv(), fx.d());
            block.forward(head.embed(fx.ints("prefill_tokens")), Arrays.copyOf(fx.f("target_hidden"), s * h),
                    new RowKv[] {kv}, s, null);
            int id = fx.ints("pending_token")[0];
            float[] hin = Arrays.copyOfRange(fx.f("target_hidden"), s * h, (s + 1) * h);
            for (int t = 0; t < depth; t++) {
                String p = "draft_step" + t + "_";
                assertThat(id).as("%s input token", p).isEqualTo(fx.ints(p + "input_token")[0]);
                assertThat(kv.length()).as("%s position", p).isEqualTo(fx.ints(p + "position")[0]);
                assertThat(F64Block.nmse(hin, fx.d(p + "hidden_in"))).as(p + "hidden_in").isLessThan(NMSE);
                ForwardTrace trace = new ForwardTrace();
                float[] y = block.forward(head.embed(new int[] {id}), hin, new RowKv[] {kv}, 1, trace);
                assertThat(F64Block.nmse(y, fx.d(p + "y"))).as(p + "y").isLessThan(NMSE);
                assertThat(F64Block.nmse(head.logits(y, 1), fx.d(p + "logits"))).as(p + "logits").isLessThan(NMSE);
                float[] lp = head.logProbs(y, 1);
                assertThat(F64Block.nmse(lp, fx.d(p + "logprobs"))).as(p + "logprobs").isLessThan(NMSE);
                assertThat(F64Block.nmse(lastRow(kv, true, fx.d()), fx.d(p + "k"))).as(p + "k").isLessThan(NMSE);
                assertThat(F64Block.nmse(lastRow(kv, false, fx.d()), fx.d(p + "v"))).as(p + "v").isLessThan(NMSE);
                assertMoeRow(fx, trace, p);
                id = argmax(lp);
                assertThat(id).as(p + "token").isEqualTo(fx.ints(p + "token")[0]);
                hin = y;
            }
            assertThat(F64Block.nmse(kv.export(true), fx.d("round_kv_k"))).as("round_kv_k").isLessThan(NMSE);
            assertThat(F64Block.nmse(kv.export(false), fx.d("round_kv_v"))).as("round_kv_v").isLessThan(NMSE);

            // rollback: keep the first rollback_kept_rows rows, then (d_1, verify_hidden) at that position
            int kept = fx.ints("rollback_kept_rows")[0];
            kv.setLength(kept);
            ForwardTrace trace = new ForwardTrace();
            int token = fx.ints("rollback_input_token")[0];
            assertThat(F64Block.nmse(head.embed(new int[] {token}), fx.d("rollback_embed"))).isLessThan(NMSE);
            float[] y = block.forward(head.embed(new int[] {token}), fx.f("verify_hidden"), new RowKv[] {kv}, 1,
                    trace);
            assertThat(F64Block.nmse(y, fx.d("rollback_y"))).as("rollback_y").isLessThan(NMSE);
            float[] lp = head.logProbs(y, 1);
            assertThat(F64Block.nmse(lp, fx.d("rollback_logprobs"))).as("rollback_logprobs").isLessThan(NMSE);
            assertThat(argmax(lp)).as("rollback_token").isEqualTo(fx.ints("rollback_token")[0]);
            assertThat(F64Block.nmse(kv.export(true), fx.d("rollback_kv_k"))).as("rollback_kv_k").isLessThan(NMSE);
            assertThat(F64Block.nmse(kv.export(false), fx.d("rollback_kv_v"))).as("rollback_kv_v").isLessThan(NMSE);
            assertMoeRow(fx, trace, "rollback_");
        }
    }

    /** For a MoE set, the one row's router, chosen experts (in order) and every MoE intermediate. */
    private static void assertMoeRow(Fixture fx, ForwardTrace trace, String p) {
        if (!fx.moe()) {
            return;
        }
        assertThat(ints(trace.get("topk_indices"))).as(p + "topk_indices").containsExactly(fx.ints(p + "topk_indices"));
        for (String f : MOE_FIELDS) {
            assertThat(F64Block.nmse(trace.get(f), fx.d(p + f))).as(p + f).isLessThan(NMSE);
        }
    }

    private static int[] ints(float[] v) {
        int[] out = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (int) v[i];
        }
        return out;
    }

    @ParameterizedTest(name = "{0}, {1}, {2}")
    @MethodSource("variants")
    void theLifecycleReproducesPrefillRoundRollbackAndChunkedPrefill(String set, String variant, KernelMode mode) {
        Fixture fx = load(set, variant);
        MtpModel m = fx.model();
        int h = m.config().hiddenSize();
        float[] hidden = fx.f("target_hidden"); // h_0 … h_8
        int[] prompt = fx.ints("prompt_tokens");
        assertThat(prompt.length).as("the scenario below is written for a 9-token prompt").isEqualTo(9);
        assertThat(fx.ints("chunk_sizes")).as("chunked prefill rows").containsExactly(3, 5);
        try (ReferenceDraftModel dm = ReferenceBackend.load(m, mode, 2)) {
            // prefill of the 9-token prompt: 8 drafter rows, retained h_8
            ReferenceDraftRows rows = dm.openReferenceRows(java.util.Collections.singletonList(null));
            rows.prefill(HostTensor.ofInts(prompt, 1, 9), HostTensor.ofFloats(hidden, 1, 9, h));
            RowCheckpoint afterPrefill = rows.capture(0);
            assertThat(afterPrefill.processedTokens()).isEqualTo(9);
            assertThat(F64Block.nmse(afterPrefill.keys().toFloatArray(), fx.d("prefill_kv_k"))).isLessThan(NMSE);
            assertThat(F64Block.nmse(afterPrefill.values().toFloatArray(), fx.d("prefill_kv_v"))).isLessThan(NMSE);

            // a greedy round of depth 4 from the pending x_9: the tokens and each position's log-probs
            List<float[]> logprobs = new ArrayList<>();
            int[][] drafts = rows.draft(fx.ints("pending_token"), 4, new long[] {1}, DraftSampling.greedy(1),
                    (row, pos, lp, off, sampled) -> {
                        logprobs.add(Arrays.copyOfRange(lp, off, off + m.config().vocabSize()));
                        return sampled;
                    });
            assertThat(drafts[0]).containsExactly(fx.ints("draft_tokens"));
            for (int t = 0; t < 4; t++) {
                assertThat(F64Block.nmse(logprobs.get(t), fx.d("draft_step" + t + "_logprobs")))
                        .as("round position %d log-probs", t).isLessThan(NMSE);
            }
            // keep d_0 (accepted 1): rows 0…9 of the round; the retained hidden is the verify tap at position 1
            float[] verify = new float[5 * h];
            System.arraycopy(fx.f("verify_hidden"), 0, verify, h, h);
            rows.commit(new int[] {1}, HostTensor.ofFloats(verify, 1, 5, h));
            RowCheckpoint afterCommit = rows.capture(0);
            assertThat(afterCommit.processedTokens()).isEqualTo(11);
            assertThat(F64Block.nmse(afterCommit.keys().toFloatArray(), firstRows(fx.d("round_kv_k"), fx.nKv(), 12, 10,
                    fx.d()))).as("kept rows 0…9").isLessThan(NMSE);

            // the next round's first row: (d_1, verify_hidden) at position 10
            List<float[]> rollbackLp = new ArrayList<>();
            int[][] next = rows.draft(new int[] {fx.ints("rollback_input_token")[0]}, 1, new long[] {2},
                    DraftSampling.greedy(1), (row, pos, lp, off, sampled) -> {
                        rollbackLp.add(Arrays.copyOfRange(lp, off, off + m.config().vocabSize()));
                        return sampled;
                    });
            assertThat(next[0][0]).isEqualTo(fx.ints("rollback_token")[0]);
            assertThat(F64Block.nmse(rollbackLp.getFirst(), fx.d("rollback_logprobs"))).isLessThan(NMSE);
            rows.commit(new int[] {0}, HostTensor.ofFloats(new float[2 * h], 1, 2, h));
            RowCheckpoint afterRollback = rows.capture(0);
            assertThat(F64Block.nmse(afterRollback.keys().toFloatArray(), fx.d("rollback_kv_k"))).isLessThan(NMSE);
            assertThat(F64Block.nmse(afterRollback.values().toFloatArray(), fx.d("rollback_kv_v"))).isLessThan(NMSE);

            // chunked prefill: x_0…x_3 then x_4…x_8 (the second chunk bridges with h_3)
            ReferenceDraftRows chunked = dm.openReferenceRows(java.util.Collections.singletonList(null));
            chunked.prefill(HostTensor.ofInts(Arrays.copyOfRange(prompt, 0, 4), 1, 4),
                    HostTensor.ofFloats(Arrays.copyOfRange(hidden, 0, 4 * h), 1, 4, h));
            chunked.prefill(HostTensor.ofInts(Arrays.copyOfRange(prompt, 4, 9), 1, 5),
                    HostTensor.ofFloats(Arrays.copyOfRange(hidden, 4 * h, 9 * h), 1, 5, h));
            RowCheckpoint c = chunked.capture(0);
            assertThat(F64Block.nmse(c.keys().toFloatArray(), fx.d("chunked_prefill_kv_k"))).isLessThan(NMSE);
            assertThat(F64Block.nmse(c.values().toFloatArray(), fx.d("chunked_prefill_kv_v"))).isLessThan(NMSE);
            assertThat(c.contentEquals(afterPrefill)).as("chunked prefill equals one-shot bit for bit").isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"qwen35-mtp-transformers", "qwen35-moe-mtp-transformers"})
    void theRopeTablesMatchTheReferenceAngles(String set) {
        Fixture fx = load(set, "float32");
        double[] invFreq = fx.d("rope_inv_freq");
        double[] cos = fx.d("rope_cos");
        int r = fx.model().config().rotaryDims();
        int positions = fx.expected().tensor("rope_cos").dim(0);
        assertThat(fx.expected().tensor("rope_cos").dim(1)).as("R from the config").isEqualTo(r);
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            for (int pos = 0; pos < positions; pos++) {
                for (int f = 0; f < r / 2; f++) {
                    // rotating the unit vector e_f by φ gives (cos φ, sin φ) in features (f, f + R/2)
                    float[] x = new float[fx.d()];
                    x[f] = 1f;
                    k.rope(x, 0, r, fx.model().config().ropeTheta(), pos);
                    assertThat((double) x[f]).as("cos at pos %d f %d", pos, f)
                            .isCloseTo(cos[pos * r + f], org.assertj.core.data.Offset.offset(1e-6));
                    assertThat(Math.cos(pos * invFreq[f])).isCloseTo(cos[pos * r + f],
                            org.assertj.core.data.Offset.offset(1e-12));
                }
            }
        }
    }

    private static float[] lastRow(RowKv kv, boolean keys, int d) {
        int n = kv.length();
        float[] all = kv.export(keys); // [nKV, n, D]
        int nKv = all.length / (n * d);
        float[] out = new float[nKv * d];
        for (int g = 0; g < nKv; g++) {
            System.arraycopy(all, (g * n + n - 1) * d, out, g * d, d);
        }
        return out;
    }

    private static double[] transpose(double[] a, int heads, int s, int d) {
        double[] out = new double[a.length];
        for (int j = 0; j < heads; j++) {
            for (int t = 0; t < s; t++) {
                System.arraycopy(a, (j * s + t) * d, out, (t * heads + j) * d, d);
            }
        }
        return out;
    }

    private static double[] firstRows(double[] kv, int heads, int t, int keep, int d) {
        double[] out = new double[heads * keep * d];
        for (int g = 0; g < heads; g++) {
            System.arraycopy(kv, g * t * d, out, g * keep * d, keep * d);
        }
        return out;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }
}
