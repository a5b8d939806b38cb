package org.mtporacle.reference.targetmodel;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An end-to-end speculative decoding loop over the {@link ReferenceTarget} and any backend's {@link DraftModel}
 * (spec §8): each request is prefilled in its own group, captured and joined to the decode group (spec §8.1), then
 * rounds draft, verify with exact-match acceptance, roll the target back and commit (spec §8.2). Finished requests
 * are retired with {@code filterRows}. The emitted stream must equal {@link #plainDecode} (spec §10.1.10).
 */
public final class SpeculativeLoop {
    /** One request: prompt (≥ 1 token), sampler, tokens to generate (≥ 1), and the round it joins at. */
    public record Request(int[] prompt, RowSampler sampler, int maxTokens, int joinRound) {
    }

    /** What a run produced: emitted tokens per request, and how many proposals were accepted in all. */
    public record Result(List<int[]> outputs, long proposed, long accepted, int rounds) {
    }

    private final ReferenceTarget target;
    private final DraftModel drafter;
    private final int depth;

    public SpeculativeLoop(ReferenceTarget target, DraftModel drafter, int depth) {
        this.target = target;
        this.drafter = drafter;
        this.depth = depth;
    }

    private static final class Live {
        final int index;
        final Request request;
        final TargetRequest target;
        final List<Integer> out = new ArrayList<>();
        int pending;

        Live(int index, Request request, TargetRequest target) {
            this.index = index;
            this.request = request;
            this.target = target;
        }

        int remaining() {
            return request.maxTokens() - out.size();
        }
    }

    public Result run(List<Request> requests) {
        int[][] outputs = new int[requests.size()][];
        List<Live> live = new ArrayList<>();
        long proposed = 0;
        long acceptedTotal = 0;
        int round = 0;
        try (DraftRows rows = drafter.openRows(List.of())) {
            while (live.size() + countDone(outputs) < requests.size() || !live.isEmpty()) {
                admit(requests, round, live, rows, outputs);
                if (live.isEmpty()) {
                    round++;
                    continue;
                }
                int b = live.size();
                int maxRemaining = live.stream().mapToInt(Live::remaining).max().orElse(1);
                int d = Math.max(0, Math.min(depth, maxRemaining - 1));
                int[] pending = new int[b];
                long[] steps = new long[b];
                List<RowSampler> samplers = new ArrayList<>();
                for (int r = 0; r < b; r++) {
                    pending[r] = live.get(r).pending;
                    steps[r] = live.get(r).out.size();
                    samplers.add(live.get(r).request.sampler());
                }
                int[][] drafts = rows.draft(pending, d, steps, new DraftSampling(samplers));
                int hidden = drafter.model().config().hiddenSize();
                float[] ctx = new float[b * (d + 1) * hidden];
                int[] accepted = new int[b];
                for (int r = 0; r < b; r++) {
                    Live l = live.get(r);
                    int before = l.target.length();
                    int[] ids = new int[d + 1];
                    ids[0] = l.pending;
                    System.arraycopy(drafts[r], 0, ids, 1, d);
                    TargetRequest.Output v = l.target.forward(ids);
                    System.arraycopy(v.taps(), 0, ctx, r * (d + 1) * hidden, (d + 1) * hidden);
                    int vocab = target.vocabSize();
                    for (int t = 0; t <= d; t++) {
                        int tok = DraftSampler.sample(v.logprobs(), t * vocab, vocab, l.request.sampler(),
                                l.out.size());
                        l.out.add(tok);
                        if (t < d && tok == drafts[r][t] && l.remaining() > 0) {
                            accepted[r]++;
                            continue;
                        }
                        break;
                    }
                    l.pending = l.out.getLast();
                    l.target.truncate(before + accepted[r] + 1);
                    proposed += d;
                    acceptedTotal += accepted[r];
                }
                rows.commit(accepted, HostTensor.ofFloats(ctx, b, d + 1, hidden));
                List<Integer> keep = new ArrayList<>();
                for (int r = 0; r < b; r++) {
                    Live l = live.get(r);
                    if (l.remaining() <= 0) {
                        outputs[l.index] = l.out.stream().mapToInt(Integer::intValue).toArray();
                    } else {
                        keep.add(r);
                    }
                }
                if (keep.size() < b) {
                    rows.filterRows(keep.stream().mapToInt(Integer::intValue).toArray());
                    List<Live> kept = new ArrayList<>();
                    for (int r : keep) {
                        kept.add(live.get(r));
                    }
                    live.clear();
                    live.addAll(kept);
                }
                round++;
            }
        }
        return new Result(Arrays.asList(outputs), proposed, acceptedTotal, round);
    }

    /** Prefills each request joining at {@code round} in its own group, samples token 0 and joins it (spec §8.1). */
    private void admit(List<Request> requests, int round, List<Live> live, DraftRows rows, int[][] outputs) {
        for (int i = 0; i < requests.size(); i++) {
            Request req = requests.get(i);
            if (req.joinRound() != round) {
                continue;
            }
            Live l = new Live(i, req, target.open());
            TargetRequest.Output p = l.target.forward(req.prompt());
            int vocab = target.vocabSize();
            int len = req.prompt().length;
            int hidden = drafter.model().config().hiddenSize();
            l.out.add(DraftSampler.sample(p.logprobs(), (len - 1) * vocab, vocab, req.sampler(), 0));
            l.pending = l.out.getFirst();
            if (l.remaining() <= 0) {
                outputs[i] = new int[] {l.pending};
                continue;
            }
            RowCheckpoint cp;
            try (DraftRows prefill = drafter.openRows(java.util.Collections.singletonList(null))) {
                prefill.prefill(HostTensor.ofInts(req.prompt(), 1, len), HostTensor.ofFloats(p.taps(), 1, len, hidden));
                cp = prefill.capture(0);
            }
            rows.append(List.of(cp));
            live.add(l);
        }
    }

    private static int countDone(int[][] outputs) {
        int n = 0;
        for (int[] o : outputs) {
            if (o != null) {
                n++;
            }
        }
        return n;
    }

    /** The target's own sampled stream for {@code request}: one token at a time, sample {@code i} at step {@code i}. */
    public static int[] plainDecode(ReferenceTarget target, Request request) {
        TargetRequest t = target.open();
        int vocab = target.vocabSize();
        int[] out = new int[request.maxTokens()];
        TargetRequest.Output o = t.forward(request.prompt());
        out[0] = DraftSampler.sample(o.logprobs(), (request.prompt().length - 1) * vocab, vocab, request.sampler(), 0);
        for (int i = 1; i < out.length; i++) {
            o = t.forward(new int[] {out[i - 1]});
            out[i] = DraftSampler.sample(o.logprobs(), 0, vocab, request.sampler(), i);
        }
        return out;
    }
}
