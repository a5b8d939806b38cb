package org.mtporacle.reference.target;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.IntPredicate;
import java.util.function.IntUnaryOperator;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;

/**
 * Speculative decoding over any backend's target rows and drafter rows (spec §13.4): each request is prefilled in
 * groups of its own, captured and joined to the decode groups; then every round drafts {@code d} tokens per row,
 * verifies {@code [pending, drafts]} in one target forward, accepts each row's longest prefix that matches the
 * target's own samples (exact match: lossless for greedy and seeded sampling alike), commits the target with each
 * row's accepted count and the drafter by the declared {@link KvPolicy}. Finished requests leave with
 * {@code filterRows}. The defining property: the emitted tokens equal {@link #plain} decoding's, token for token.
 *
 * <p>Sampling: the target's token at a request's output index {@code i} is drawn with the request's sampler at step
 * {@code i} from the log-softmax of the logits there (greedy: the first index of the largest logit); the drafter's
 * draws use the same step numbering (spec §7).
 */
public final class SpeculativeDecoding {
    /** What the drafter keeps after a verify (spec §13.4). */
    public enum KvPolicy {
        /** The drafted rows stay (the lifecycle's commit, spec §5.8): the original design, mlx-vlm. */
        KEEP("keep"),
        /** Only the pending row stays; the accepted drafts are re-run with the verify's true taps (vLLM). */
        REBUILD("rebuild");

        private final String label;

        KvPolicy(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }

        public static KvPolicy of(String label) {
            for (KvPolicy p : values()) {
                if (p.label.equals(label)) {
                    return p;
                }
            }
            throw MtpException.invalidArgument("kv policy: '" + label + "', expected keep or rebuild");
        }
    }

    /**
     * A run's declared choices.
     *
     * @param tap     the hidden that feeds the drafter
     * @param policy  the drafter's KV after a verify
     * @param depth   round → the draft depth asked for (≥ 0; capped by what the rows still need)
     * @param restore round → whether every row is captured and restored (in reverse order) after that round
     */
    public record Options(HiddenTap tap, KvPolicy policy, IntUnaryOperator depth, IntPredicate restore) {
        /** A fixed depth, no restores. */
        public static Options of(HiddenTap tap, KvPolicy policy, int depth) {
            return new Options(tap, policy, round -> depth, round -> false);
        }
    }

    /** One request: prompt (≥ 1 token), sampler, tokens to emit (≥ 1) and the round it joins at. */
    public record Request(int[] prompt, RowSampler sampler, int maxTokens, int joinRound) {
    }

    /**
     * The raw acceptance counters (research §4), from which vLLM's and llama.cpp's figures follow: mean acceptance
     * length {@code 1 + accepted / drafts}, draft acceptance rate {@code accepted / draftTokens}, per-position rate
     * {@code acceptedPerPosition[i] / drafts}.
     *
     * @param rounds              rounds run
     * @param drafts              row-rounds with at least one draft token
     * @param draftTokens         draft tokens verified
     * @param accepted            draft tokens accepted
     * @param acceptedPerPosition [i] row-rounds whose first {@code i + 1} drafts were accepted
     * @param emitted             tokens emitted in all
     */
    public record Counters(long rounds, long drafts, long draftTokens, long accepted, long[] acceptedPerPosition,
                           long emitted) {
        /** vLLM's mean acceptance length {@code 1 + accepted / drafts} (1 when nothing was drafted). */
        public double meanAcceptanceLength() {
            return drafts == 0 ? 1.0 : 1.0 + (double) accepted / drafts;
        }
    }

    /** What a run emitted per request, each request's accepted count per round it took part in, and the counters. */
    public record Result(List<int[]> outputs, List<int[]> accepted, Counters counters) {
    }

    /** Sees the groups after each round's commits (tests compare every row's state with a plain run's). */
    @FunctionalInterface
    public interface Observer {
        /** @param requests the request index of each row, in row order */
        void afterCommit(int round, int[] requests, TargetRows target, DraftRows drafter);
    }

    private final LoadedTarget target;
    private final DraftModel drafter;
    private final Options options;

    public SpeculativeDecoding(LoadedTarget target, DraftModel drafter, Options options) {
        this.target = target;
        this.drafter = drafter;
        this.options = options;
    }

    /** A live request: its index, what it emitted, and the token the target has yet to process. */
    private static final class Live {
        final int index;
        final Request request;
        final List<Integer> out = new ArrayList<>();
        final List<Integer> accepted = new ArrayList<>();

        Live(int index, Request request) {
            this.index = index;
            this.request = request;
        }

        int remaining() {
            return request.maxTokens() - out.size();
        }

        int pending() {
            return out.getLast();
        }
    }

    /** Runs every request to its {@code maxTokens}; {@code observer} may be null. */
    public Result run(List<Request> requests, Observer observer) {
        int[][] outputs = new int[requests.size()][];
        int[][] accepted = new int[requests.size()][];
        List<Live> live = new ArrayList<>();
        Tally tally = new Tally();
        int lastJoin = requests.stream().mapToInt(Request::joinRound).max().orElse(0);
        TargetRows t = target.openRows(List.of());
        DraftRows m = drafter.openRows(List.of());
        try {
            for (int round = 0; round <= lastJoin || !live.isEmpty(); round++) {
                for (int i = 0; i < requests.size(); i++) {
                    if (requests.get(i).joinRound() == round) {
                        admit(i, requests.get(i), live, t, m, outputs, accepted);
                    }
                }
                if (live.isEmpty()) {
                    continue;
                }
                round(round, live, t, m, tally);
                if (observer != null) {
                    observer.afterCommit(round, live.stream().mapToInt(l -> l.index).toArray(), t, m);
                }
                retire(live, t, m, outputs, accepted);
                if (options.restore().test(round) && !live.isEmpty()) {
                    TargetRows t2 = target.openRows(List.of());
                    DraftRows m2 = drafter.openRows(List.of());
                    restoreReversed(live, t, m, t2, m2);
                    t.close();
                    m.close();
                    t = t2;
                    m = m2;
                }
                tally.rounds++;
            }
        } finally {
            t.close();
            m.close();
        }
        return new Result(Arrays.asList(outputs), Arrays.asList(accepted), tally.counters());
    }

    /** One round (spec §13.4): draft, verify, accept, commit both sides. */
    private void round(int round, List<Live> live, TargetRows t, DraftRows m, Tally tally) {
        int b = live.size();
        int need = live.stream().mapToInt(Live::remaining).max().orElse(0);
        int d = Math.max(0, Math.min(options.depth().applyAsInt(round), need));
        int[] pending = new int[b];
        long[] steps = new long[b];
        List<RowSampler> samplers = new ArrayList<>();
        for (int r = 0; r < b; r++) {
            pending[r] = live.get(r).pending();
            steps[r] = live.get(r).out.size();
            samplers.add(live.get(r).request.sampler());
        }
        int[][] drafts = m.draft(pending, d, steps, new DraftSampling(samplers));
        int[][] tokens = new int[b][d + 1];
        for (int r = 0; r < b; r++) {
            tokens[r][0] = pending[r];
            System.arraycopy(drafts[r], 0, tokens[r], 1, d);
        }
        TargetOutput v = t.verify(HostTensor.ofIntRows(tokens));
        float[] logits = v.logits().toFloatArray();
        int vocab = v.logits().dim(2);
        int[] acc = new int[b];
        for (int r = 0; r < b; r++) {
            Live l = live.get(r);
            for (int p = 0; p <= d; p++) {
                int tok = sample(logits, (r * (d + 1) + p) * vocab, vocab, l.request.sampler(), l.out.size());
                l.out.add(tok);
                if (p < d && tok == drafts[r][p]) {
                    acc[r]++;
                    continue;
                }
                break;
            }
            l.accepted.add(acc[r]);
            tally.add(d, acc[r]);
        }
        t.commit(acc);
        HostTensor taps = v.taps(options.tap());
        if (options.policy() == KvPolicy.KEEP || d == 0) {
            m.commit(acc, taps);
        } else {
            m.commit(new int[b], taps);
            rebuild(m, acc, drafts, taps);
        }
    }

    private void rebuild(DraftRows m, int[] acc, int[][] drafts, HostTensor taps) {
        rebuild(drafter, m, acc, drafts, taps);
    }

    /**
     * The {@link KvPolicy#REBUILD} step after {@code commit(0)} of group {@code m} of {@code drafter}: each row with
     * {@code a > 0} accepted drafts is prefilled with them and the verify's taps at positions {@code 1 … a} (its
     * retained hidden is position 0's, so draft {@code j} pairs with the tap at position {@code j − 1}, spec §5.4),
     * through a group of its own; then the group is emptied and every row appended again, in order.
     *
     * @param drafts [B][≥ a] each row's drafts; taps [B, W, H] the verify's taps at the declared hidden tap
     */
    public static void rebuild(DraftModel drafter, DraftRows m, int[] acc, int[][] drafts, HostTensor taps) {
        if (Arrays.stream(acc).allMatch(a -> a == 0)) {
            return;
        }
        int b = acc.length;
        int width = taps.dim(1);
        int h = taps.dim(2);
        float[] ctx = taps.toFloatArray();
        List<RowCheckpoint> rows = new ArrayList<>();
        for (int r = 0; r < b; r++) {
            RowCheckpoint cp = m.capture(r);
            if (acc[r] > 0) {
                try (DraftRows one = drafter.openRows(List.of(cp))) {
                    int a = acc[r];
                    float[] c = Arrays.copyOfRange(ctx, (r * width + 1) * h, (r * width + 1 + a) * h);
                    one.prefill(HostTensor.ofInts(Arrays.copyOf(drafts[r], a), 1, a), HostTensor.ofFloats(c, 1, a, h));
                    cp = one.capture(0);
                }
            }
            rows.add(cp);
        }
        m.filterRows(new int[0]);
        m.append(rows);
    }

    /** Prefills request {@code i} alone, samples its first token and joins it (spec §13.4). */
    private void admit(int i, Request req, List<Live> live, TargetRows t, DraftRows m, int[][] outputs,
                       int[][] accepted) {
        Live l = new Live(i, req);
        int len = req.prompt().length;
        TargetCheckpoint tcp;
        RowCheckpoint dcp;
        try (TargetRows one = target.openRows(Collections.singletonList(null))) {
            TargetOutput p = one.prefill(HostTensor.ofInts(req.prompt(), 1, len));
            l.out.add(sample(p.logits().toFloatArray(), 0, p.logits().dim(2), req.sampler(), 0));
            if (l.remaining() <= 0) {
                outputs[i] = new int[] {l.pending()};
                accepted[i] = new int[0];
                return;
            }
            tcp = one.capture(0);
            try (DraftRows d = drafter.openRows(Collections.singletonList(null))) {
                d.prefill(HostTensor.ofInts(req.prompt(), 1, len), p.taps(options.tap()));
                dcp = d.capture(0);
            }
        }
        t.append(List.of(tcp));
        m.append(List.of(dcp));
        live.add(l);
    }

    /** Retires finished requests from both groups, keeping their outputs (cut to {@code maxTokens}). */
    private static void retire(List<Live> live, TargetRows t, DraftRows m, int[][] outputs, int[][] accepted) {
        List<Integer> keep = new ArrayList<>();
        for (int r = 0; r < live.size(); r++) {
            Live l = live.get(r);
            if (l.remaining() <= 0) {
                outputs[l.index] = l.out.stream().limit(l.request.maxTokens()).mapToInt(Integer::intValue).toArray();
                accepted[l.index] = l.accepted.stream().mapToInt(Integer::intValue).toArray();
            } else {
                keep.add(r);
            }
        }
        if (keep.size() == live.size()) {
            return;
        }
        int[] k = keep.stream().mapToInt(Integer::intValue).toArray();
        t.filterRows(k);
        m.filterRows(k);
        List<Live> kept = new ArrayList<>();
        for (int r : k) {
            kept.add(live.get(r));
        }
        live.clear();
        live.addAll(kept);
    }

    /** Captures every row of both groups and appends them to the new groups in reverse order. */
    private static void restoreReversed(List<Live> live, TargetRows t, DraftRows m, TargetRows t2, DraftRows m2) {
        List<TargetCheckpoint> tcps = new ArrayList<>();
        List<RowCheckpoint> dcps = new ArrayList<>();
        for (int r = live.size() - 1; r >= 0; r--) {
            tcps.add(t.capture(r));
            dcps.add(m.capture(r));
        }
        t2.append(tcps);
        m2.append(dcps);
        Collections.reverse(live);
    }

    /**
     * Plain decoding of {@code request} on its own: the prompt's prefill, then one token at a time (each a prefill of
     * one token), token {@code i} sampled at step {@code i}.
     */
    public static int[] plain(LoadedTarget target, Request request) {
        int[] out = new int[request.maxTokens()];
        try (TargetRows t = target.openRows(Collections.singletonList(null))) {
            TargetOutput o = t.prefill(HostTensor.ofInts(request.prompt(), 1, request.prompt().length));
            for (int i = 0; ; i++) {
                out[i] = sample(o.logits().toFloatArray(), 0, o.logits().dim(2), request.sampler(), i);
                if (i + 1 == out.length) {
                    return out;
                }
                o = t.prefill(HostTensor.ofInts(new int[] {out[i]}, 1, 1));
            }
        }
    }

    /** The target's token at {@code logits[off, off+vocab)}, output index {@code step} (class Javadoc). */
    static int sample(float[] logits, int off, int vocab, RowSampler sampler, long step) {
        if (sampler.isGreedy()) {
            return org.mtporacle.reference.sampling.DraftSampler.argmax(logits, off, vocab);
        }
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            max = Math.max(max, logits[off + i]);
        }
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            sum += StrictMath.exp(logits[off + i] - max);
        }
        double lse = max + StrictMath.log(sum);
        float[] lp = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            lp[i] = (float) (logits[off + i] - lse);
        }
        return org.mtporacle.reference.sampling.DraftSampler.sample(lp, 0, vocab, sampler, step);
    }

    /** The counters as a run adds to them. */
    private static final class Tally {
        long rounds;
        long drafts;
        long draftTokens;
        long accepted;
        long emitted;
        long[] perPosition = new long[0];

        void add(int depth, int a) {
            if (depth > 0) {
                drafts++;
            }
            draftTokens += depth;
            accepted += a;
            emitted += a + 1;
            if (perPosition.length < depth) {
                perPosition = Arrays.copyOf(perPosition, depth);
            }
            for (int i = 0; i < a; i++) {
                perPosition[i]++;
            }
        }

        Counters counters() {
            return new Counters(rounds, drafts, draftTokens, accepted, perPosition.clone(), emitted);
        }
    }
}
