package org.mtporacle.reference.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mtporacle.reference.target.ExternalTarget.nmse;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * Reproduces every tensor of the external float64 reference of a whole Qwen3.5 hybrid target
 * ({@link ExternalTarget}), f32 and bf16 weights, vector and scalar kernels: the plain token-by-token run (every
 * layer's output, both taps, logits, GDN conv windows and recurrent states after every position, attention K/V), row
 * 0's GDN and attention internals, one-shot and split prefills in both GDN forms, the speculative verify-and-rollback
 * scenario (a rollback to every verified prefix, a zero-draft step), and MTP-drafted speculative decoding for both
 * taps and both drafter KV policies (every token and accepted count exactly).
 */
class TargetExternalReferenceTest {
    /** f32 arithmetic against float64 values over exactly representable weights and inputs. */
    private static final double NMSE = 1e-10;
    /** The chunked GDN form reassociates the recurrence; still f32 against float64. */
    private static final double CHUNKED_NMSE = 1e-10;

    static Stream<Arguments> variants() {
        List<Arguments> out = new ArrayList<>();
        for (String v : ExternalTarget.VARIANTS) {
            for (KernelMode m : KernelMode.values()) {
                out.add(Arguments.of(v, m));
            }
        }
        return out.stream();
    }

    private static int rows(ExternalTarget x) {
        return x.ints("meta_prompt_lengths").length;
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void thePlainTokenByTokenRunMatchesAtEveryPosition(String variant, KernelMode mode) {
        ExternalTarget x = ExternalTarget.load(variant);
        TargetConfig c = x.target().config();
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        int layers = c.layerCount();
        int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int win = c.gdn().windowSize();
        int st = c.gdn().stateSize();
        try (ReferenceTarget t = new ReferenceTarget(x.target(), new Kernels(mode, 2))) {
            for (int r = 0; r < rows(x); r++) {
                String p = "row" + r + "_";
                int[] tokens = x.ints(p + "tokens");
                int len = tokens.length - 1;
                int prompt = x.ints(p + "prompt").length;
                double[] logits = x.d(p + "logits");
                double[] pre = x.d(p + "hidden_prenorm");
                double[] post = x.d(p + "hidden_postnorm");
                double[] layerOut = x.d(p + "layer_out");
                double[] conv = x.d(p + "conv_window");
                double[] rec = x.d(p + "recurrent_state");
                int[] greedy = x.ints(p + "greedy");
                try (ReferenceTargetRows rows = t.openReferenceRows(java.util.Collections.singletonList(null))) {
                    for (int i = 0; i < len; i++) {
                        TargetTrace trace = new TargetTrace();
                        rows.traceNextCall(trace);
                        TargetOutput o = rows.prefill(HostTensor.ofInts(new int[] {tokens[i]}, 1, 1));
                        String at = variant + " row " + r + " position " + i;
                        float[] lg = o.logits().toFloatArray();
                        assertThat(nmse(lg, 0, logits, i * v, v)).as("%s logits", at).isLessThan(NMSE);
                        assertThat(nmse(o.preNorm().toFloatArray(), 0, pre, i * h, h)).as("%s pre", at)
                                .isLessThan(NMSE);
                        assertThat(nmse(o.postNorm().toFloatArray(), 0, post, i * h, h)).as("%s post", at)
                                .isLessThan(NMSE);
                        for (int l = 0; l < layers; l++) {
                            assertThat(nmse(trace.get(l, "layer_out"), 0, layerOut, (l * len + i) * h, h))
                                    .as("%s layer %d output", at, l).isLessThan(NMSE);
                        }
                        if (i >= prompt - 1) {
                            assertThat(org.mtporacle.reference.sampling.DraftSampler.argmax(lg, 0, v))
                                    .as("%s greedy token", at).isEqualTo(greedy[i - prompt + 1]);
                        }
                        TargetCheckpoint cp = rows.capture(0);
                        float[] cw = cp.convWindows().toFloatArray();
                        float[] rs = cp.recurrentStates().toFloatArray();
                        for (int g = 0; g < nGdn; g++) {
                            assertThat(nmse(cw, g * win, conv, (g * len + i) * win, win)).as("%s conv window %d", at, g)
                                    .isLessThan(NMSE);
                            assertThat(nmse(rs, g * st, rec, (g * len + i) * st, st)).as("%s state %d", at, g)
                                    .isLessThan(NMSE);
                        }
                        if (r == 0) {
                            traces.add(trace);
                        }
                    }
                    TargetCheckpoint last = rows.capture(0);
                    assertThat(nmse(last.keys().toFloatArray(), x.d(p + "attn_k"))).as("%s row %d K", variant, r)
                            .isLessThan(NMSE);
                    assertThat(nmse(last.values().toFloatArray(), x.d(p + "attn_v"))).as("%s row %d V", variant, r)
                            .isLessThan(NMSE);
                }
                if (r == 0) {
                    rowZeroInternals(x, c, len, variant);
                }
            }
        }
    }

    private final List<TargetTrace> traces = new ArrayList<>();

    /** Row 0's GDN and attention internals, per layer of their kind and position, against {@code trace_row0_*}. */
    private void rowZeroInternals(ExternalTarget x, TargetConfig c, int len, String variant) {
        String[] gdn = {"gdn_qkv_raw", "gdn_qkv_conv", "gdn_q", "gdn_k", "gdn_v", "gdn_z", "gdn_a", "gdn_b",
            "gdn_beta", "gdn_g", "gdn_core", "gdn_normed", "gdn_out"};
        String[] attention = {"attn_gated", "attn_out"};
        String[] every = {"mixer_residual", "mlp_out"};
        for (String name : gdn) {
            compareTraced(x, c, len, name, TargetConfig.LayerType.LINEAR_ATTENTION, variant);
        }
        for (String name : attention) {
            compareTraced(x, c, len, name, TargetConfig.LayerType.FULL_ATTENTION, variant);
        }
        for (String name : every) {
            compareTraced(x, c, len, name, null, variant);
        }
    }

    private void compareTraced(ExternalTarget x, TargetConfig c, int len, String name, TargetConfig.LayerType type,
                               String variant) {
        double[] want = x.d("trace_row0_" + name);
        int slots = type == null ? c.layerCount() : c.count(type);
        int width = want.length / (slots * len);
        for (int l = 0, slot = 0; l < c.layerCount(); l++) {
            if (type != null && c.layers().get(l) != type) {
                continue;
            }
            for (int i = 0; i < len; i++) {
                float[] got = traces.get(i).get(l, name);
                assertThat(got).as("%s traced at layer %d", name, l).hasSize(width);
                assertThat(nmse(got, 0, want, (slot * len + i) * width, width))
                        .as("%s row 0 %s layer %d position %d", variant, name, l, i).isLessThan(NMSE);
            }
            slot++;
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void oneShotAndSplitPrefillsMatchInBothForms(String variant, KernelMode mode) {
        ExternalTarget x = ExternalTarget.load(variant);
        TargetConfig c = x.target().config();
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        int layers = c.layerCount();
        for (ReferenceTarget.PrefillForm form : ReferenceTarget.PrefillForm.values()) {
            double tol = form == ReferenceTarget.PrefillForm.CHUNKED ? CHUNKED_NMSE : NMSE;
            try (ReferenceTarget t = new ReferenceTarget(x.target(), new Kernels(mode, 2), form)) {
                for (int r = 0; r < rows(x); r++) {
                    String p = "prefill_row" + r + "_";
                    int[] prompt = x.ints("row" + r + "_prompt");
                    int n = prompt.length;
                    String at = variant + " " + form + " row " + r;
                    try (var rows = t.openRows(java.util.Collections.singletonList(null))) {
                        TargetOutput o = rows.prefill(HostTensor.ofInts(prompt, 1, n));
                        assertThat(nmse(o.logits().toFloatArray(), 0, x.d(p + "logits"), (n - 1) * v, v))
                                .as("%s last logits", at).isLessThan(tol);
                        assertThat(nmse(o.preNorm().toFloatArray(), 0, x.d(p + "layer_out"), (layers - 1) * n * h,
                                n * h)).as("%s pre-norm taps", at).isLessThan(tol);
                        TargetCheckpoint cp = rows.capture(0);
                        assertThat(nmse(cp.convWindows().toFloatArray(), x.d(p + "conv_window"))).as("%s conv", at)
                                .isLessThan(tol);
                        assertThat(nmse(cp.recurrentStates().toFloatArray(), x.d(p + "recurrent_state")))
                                .as("%s state", at).isLessThan(tol);
                    }
                }
                int[] sizes = x.ints("prefill_split_row2_sizes");
                int[] prompt = x.ints("row2_prompt");
                try (var rows = t.openRows(java.util.Collections.singletonList(null))) {
                    rows.prefill(HostTensor.ofInts(Arrays.copyOf(prompt, sizes[0]), 1, sizes[0]));
                    TargetOutput o = rows.prefill(HostTensor.ofInts(Arrays.copyOfRange(prompt, sizes[0],
                            prompt.length), 1, sizes[1]));
                    String at = variant + " " + form + " split row 2";
                    assertThat(nmse(o.logits().toFloatArray(), 0, x.d("prefill_split_row2_logits"),
                            (prompt.length - 1) * v, v)).as("%s last logits", at).isLessThan(tol);
                    TargetCheckpoint cp = rows.capture(0);
                    assertThat(nmse(cp.convWindows().toFloatArray(), x.d("prefill_split_row2_conv_window")))
                            .as("%s conv", at).isLessThan(tol);
                    assertThat(nmse(cp.recurrentStates().toFloatArray(), x.d("prefill_split_row2_recurrent_state")))
                            .as("%s state", at).isLessThan(tol);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void verifyAndRollbackToEveryPrefixMatch(String variant, KernelMode mode) {
        ExternalTarget x = ExternalTarget.load(variant);
        TargetConfig c = x.target().config();
        int v = c.shape().vocabSize();
        int win = c.gdn().windowSize();
        int st = c.gdn().stateSize();
        int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        try (ReferenceTarget t = new ReferenceTarget(x.target(), new Kernels(mode, 2))) {
            for (int r = 0; r < rows(x); r++) {
                int[] prompt = x.ints("row" + r + "_prompt");
                try (var rows = t.openRows(java.util.Collections.singletonList(null))) {
                    rows.prefill(HostTensor.ofInts(prompt, 1, prompt.length));
                    for (int step = 1; x.has("spec_row" + r + "_step" + step + "_tokens"); step++) {
                        String p = "spec_row" + r + "_step" + step + "_";
                        String at = variant + " row " + r + " step " + step;
                        int[] tokens = x.ints(p + "tokens");
                        int n = tokens.length;
                        TargetCheckpoint before = rows.capture(0);
                        // a rollback to every prefix, each from the same pre-verify state, against the snapshots
                        double[] snapConv = x.d(p + "snap_conv_window");
                        double[] snapRec = x.d(p + "snap_recurrent_state");
                        for (int a = 0; a < n; a++) {
                            try (var probe = t.openRows(List.of(before))) {
                                probe.verify(HostTensor.ofInts(tokens, 1, n));
                                probe.commit(new int[] {a});
                                TargetCheckpoint cp = probe.capture(0);
                                assertThat(cp.processedTokens()).isEqualTo(before.processedTokens() + a + 1);
                                float[] cw = cp.convWindows().toFloatArray();
                                float[] rs = cp.recurrentStates().toFloatArray();
                                assertThat(nmse(cw, 0, snapConv, a * nGdn * win, nGdn * win))
                                        .as("%s rollback to %d conv", at, a).isLessThan(NMSE);
                                assertThat(nmse(rs, 0, snapRec, a * nGdn * st, nGdn * st))
                                        .as("%s rollback to %d state", at, a).isLessThan(NMSE);
                            }
                        }
                        TargetOutput o = rows.verify(HostTensor.ofInts(tokens, 1, n));
                        float[] lg = o.logits().toFloatArray();
                        assertThat(nmse(lg, x.d(p + "logits"))).as("%s verify logits", at).isLessThan(NMSE);
                        int[] argmax = new int[n];
                        for (int i = 0; i < n; i++) {
                            argmax[i] = org.mtporacle.reference.sampling.DraftSampler.argmax(lg, i * v, v);
                        }
                        assertThat(argmax).as("%s argmax", at).containsExactly(x.ints(p + "argmax"));
                        int a = 0;
                        while (a < n - 1 && argmax[a] == tokens[a + 1]) {
                            a++;
                        }
                        assertThat(a).as("%s accepted", at).isEqualTo(x.ints(p + "accepted")[0]);
                        rows.commit(new int[] {a});
                        TargetCheckpoint cp = rows.capture(0);
                        assertThat(nmse(cp.convWindows().toFloatArray(), x.d(p + "commit_conv_window")))
                                .as("%s committed conv", at).isLessThan(NMSE);
                        assertThat(nmse(cp.recurrentStates().toFloatArray(), x.d(p + "commit_recurrent_state")))
                                .as("%s committed state", at).isLessThan(NMSE);
                        assertThat(nmse(cp.keys().toFloatArray(), x.d(p + "commit_attn_k"))).as("%s K", at)
                                .isLessThan(NMSE);
                        assertThat(nmse(cp.values().toFloatArray(), x.d(p + "commit_attn_v"))).as("%s V", at)
                                .isLessThan(NMSE);
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void mtpDraftedSpeculativeDecodingMatchesForBothTapsAndPolicies(String variant, KernelMode mode) {
        ExternalTarget x = ExternalTarget.load(variant);
        int n = x.ints("meta_num_generated")[0];
        try (ReferenceTarget t = new ReferenceTarget(x.target(), new Kernels(mode, 2));
             ReferenceDraftModel m = new ReferenceDraftModel(x.drafter(), new Kernels(mode, 2))) {
            for (HiddenTap tap : HiddenTap.values()) {
                for (SpeculativeDecoding.KvPolicy policy : SpeculativeDecoding.KvPolicy.values()) {
                    SpeculativeDecoding loop = new SpeculativeDecoding(t, m, SpeculativeDecoding.Options.of(tap,
                            policy, 3));
                    for (int r = 0; r < rows(x); r++) {
                        String p = "mtp_" + tap.label() + "_" + policy.label() + "_row" + r + "_";
                        String at = variant + " " + tap.label() + " " + policy.label() + " row " + r;
                        SpeculativeDecoding.Request req = new SpeculativeDecoding.Request(x.ints("row" + r + "_prompt"),
                                RowSampler.GREEDY, n, 0);
                        float[][] drafterKv = new float[2][];
                        SpeculativeDecoding.Result res = loop.run(List.of(req), (round, requests, tr, dr) -> {
                            RowCheckpoint cp = dr.capture(0); // the drafter's KV after each round's commit
                            drafterKv[0] = cp.keys() == null ? null : cp.keys().toFloatArray();
                            drafterKv[1] = cp.values() == null ? null : cp.values().toFloatArray();
                        });
                        // the drafter's KV after the last round: the policies' difference lives here
                        assertThat(nmse(drafterKv[0], x.d(p + "final_kv_k"))).as("%s drafter K", at).isLessThan(NMSE);
                        assertThat(nmse(drafterKv[1], x.d(p + "final_kv_v"))).as("%s drafter V", at).isLessThan(NMSE);
                        assertThat(res.outputs().getFirst()).as("%s emitted", at).containsExactly(x.ints(p + "emitted"));
                        assertThat(res.accepted().getFirst()).as("%s accepted per round", at)
                                .containsExactly(x.ints(p + "round_accepted"));
                        int[] counters = x.ints(p + "counters"); // rounds, drafts, draft tokens, accepted, emitted
                        SpeculativeDecoding.Counters k = res.counters();
                        assertThat(new long[] {k.rounds(), k.drafts(), k.draftTokens(), k.accepted()}).as("%s", at)
                                .containsExactly(counters[0], counters[1], counters[2], counters[3]);
                        assertThat(k.acceptedPerPosition()).as("%s per position", at)
                                .containsExactly(Arrays.stream(x.ints(p + "accepted_per_position")).asLongStream()
                                        .toArray());
                    }
                }
            }
        }
    }
}
