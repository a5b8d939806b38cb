package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.target.lockstep.TargetDivergence.Kind;
import org.mtporacle.reference.target.SpeculativeDecoding;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;
import org.mtporacle.reference.target.SpeculativeDecoding.Request;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The end-to-end property for a backend's target (spec §13.4): its speculative loop emits plain decoding's tokens, and,
 * run beside the reference's loop under the same declared tap and drafter KV policy, the same tokens and the same
 * accepted count in every round, and after every round's commits the same target state and drafter state for every
 * request, each by NMSE and, over the whole run, by its typical NMSE per kind (the median: {@link
 * TargetJudge#typicalExcess}). The second half is what catches an engine that declares one policy and runs the other:
 * both policies keep speculative == plain; the acceptance, and always the drafter's KV, show which one ran.
 *
 * <p>Plain decoding is compared exactly: a backend whose forward is not width-invariant may differ at near-ties (a
 * known trait of batched kernels), which this check then reports; a tie-aware variant is left for later.
 */
public final class SpeculativeLoopCheck {
    private SpeculativeLoopCheck() {
    }

    /** An engine's speculative loop under declared options; it shows its groups after every round's commits. */
    @FunctionalInterface
    public interface Engine {
        SpeculativeDecoding.Result run(List<Request> requests, Options declared, SpeculativeDecoding.Observer seen);
    }

    /** The reference loop ({@link SpeculativeDecoding}) over {@code target} and {@code drafter}. */
    public static Engine of(LoadedTarget target, DraftModel drafter) {
        return (requests, options, seen) -> new SpeculativeDecoding(target, drafter, options).run(requests, seen);
    }

    /** Every request's target and drafter checkpoints after each round's commits, by round then request. */
    private static final class States implements SpeculativeDecoding.Observer {
        final List<java.util.Map<Integer, Object[]>> rounds = new ArrayList<>();

        @Override
        public void afterCommit(int round, int[] requests, TargetRows target, DraftRows drafter) {
            java.util.Map<Integer, Object[]> m = new java.util.TreeMap<>();
            for (int row = 0; row < requests.length; row++) {
                m.put(requests[row], new Object[] {target.capture(row), drafter.capture(row)});
            }
            while (rounds.size() <= round) {
                rounds.add(new java.util.TreeMap<>());
            }
            rounds.set(round, m);
        }
    }

    /** Seeded requests: 1–3, prompts of 1–10 tokens, 4–14 tokens each, joining at rounds 0–2, greedy or seeded. */
    public static List<Request> requests(long seed, int vocab) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int n = 1 + rnd.nextInt(3);
        List<Request> out = new ArrayList<>();
        for (int q = 0; q < n; q++) {
            int[] prompt = new int[1 + rnd.nextInt(10)];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = rnd.nextInt(vocab);
            }
            RowSampler sampler = rnd.nextInt(4) > 0 ? RowSampler.GREEDY : RowSampler.of(0.8, 20, 0.95, rnd.nextLong());
            out.add(new Request(prompt, sampler, 4 + rnd.nextInt(11), rnd.nextInt(3)));
        }
        return out;
    }

    /** Seeded options: the given tap and policy, depths 0–4 per round, a reverse-order restore now and then. */
    public static Options options(long seed, HiddenTap tap, KvPolicy policy) {
        return new Options(tap, policy, round -> new SplittableRandom(seed + round).nextInt(5),
                round -> new SplittableRandom(~seed + round).nextInt(5) == 0);
    }

    /** The subject's loop against plain decoding on the subject's target alone; the first difference, or null. */
    public static TargetDivergence plainOnly(Engine subject, LoadedTarget subjectTarget, List<Request> requests,
                                             Options options) {
        String how = "tap " + options.tap().label() + ", policy " + options.policy().label();
        SpeculativeDecoding.Result s;
        try {
            s = subject.run(requests, options, null);
        } catch (RuntimeException e) {
            return TargetJudge.of(Kind.UNEXPECTED_ERROR, -1, -1, "the speculative loop (" + how + ") failed: " + e);
        }
        for (int q = 0; q < requests.size(); q++) {
            int[] plain = SpeculativeDecoding.plain(subjectTarget, requests.get(q));
            int[] spec = s.outputs().get(q);
            if (!Arrays.equals(plain, spec)) {
                return TargetJudge.of(Kind.LOOP, q, firstDifference(plain, spec), "request " + q + " (" + how
                        + "): speculative " + Arrays.toString(spec) + " != plain " + Arrays.toString(plain)
                        + " on the backend's target (spec §13.4)");
            }
        }
        return null;
    }

    /**
     * Runs {@code requests} through the subject's loop, plain decoding on the subject's target and the reference's
     * loop; the first difference, or null.
     */
    public static TargetDivergence check(Engine subject, LoadedTarget subjectTarget, Engine reference,
                                         List<Request> requests, Options options, TargetTolerance tolerance) {
        return check(subject, subjectTarget, reference, requests, options, new TargetJudge(tolerance));
    }

    /**
     * {@link #check(Engine, LoadedTarget, Engine, List, Options, TargetTolerance)} with the judge given, whose counts
     * then hold what the run compared (the run's per-kind medians among them: a calibration reads them).
     */
    public static TargetDivergence check(Engine subject, LoadedTarget subjectTarget, Engine reference,
                                         List<Request> requests, Options options, TargetJudge judge) {
        String how = "tap " + options.tap().label() + ", policy " + options.policy().label();
        SpeculativeDecoding.Result s;
        States sStates = new States();
        States rStates = new States();
        try {
            s = subject.run(requests, options, sStates);
        } catch (RuntimeException e) {
            return TargetJudge.of(Kind.UNEXPECTED_ERROR, -1, -1, "the speculative loop (" + how + ") failed: " + e);
        }
        SpeculativeDecoding.Result r = reference.run(requests, options, rStates);
        for (int q = 0; q < requests.size(); q++) {
            int[] plain = SpeculativeDecoding.plain(subjectTarget, requests.get(q));
            int[] spec = s.outputs().get(q);
            if (!Arrays.equals(plain, spec)) {
                return TargetJudge.of(Kind.LOOP, q, firstDifference(plain, spec), "request " + q + " (" + how
                        + "): speculative " + Arrays.toString(spec) + " != plain " + Arrays.toString(plain)
                        + " on the backend's target (spec §13.4)");
            }
            if (!Arrays.equals(r.outputs().get(q), spec)) {
                return TargetJudge.of(Kind.LOOP, q, firstDifference(r.outputs().get(q), spec), "request " + q + " ("
                        + how + "): tokens " + Arrays.toString(spec) + ", the reference's loop emits "
                        + Arrays.toString(r.outputs().get(q)));
            }
            if (!Arrays.equals(r.accepted().get(q), s.accepted().get(q))) {
                return TargetJudge.of(Kind.LOOP, q, firstDifference(r.accepted().get(q), s.accepted().get(q)),
                        "request " + q + " (" + how + "): accepted per round " + Arrays.toString(s.accepted().get(q))
                                + ", the reference's loop under the declared policy accepts "
                                + Arrays.toString(r.accepted().get(q)) + " (spec §13.4: keep and rebuild both emit "
                                + "plain's tokens; only acceptance tells them apart)");
            }
        }
        TargetDivergence d = states(sStates, rStates, how, judge);
        return d != null ? d : judge.typical("the loop (" + how + ")");
    }

    /**
     * After every round, every request's target state and drafter state against the reference loop's: the drafter's
     * KV is where the declared policy shows when the drafted tokens happen to agree (keep: the drafted rows' K/V;
     * rebuild: the accepted drafts re-run on the target's taps).
     */
    private static TargetDivergence states(States subject, States reference, String how, TargetJudge judge) {
        for (int round = 0; round < reference.rounds.size(); round++) {
            for (var e : reference.rounds.get(round).entrySet()) {
                Object[] theirs = round < subject.rounds.size() ? subject.rounds.get(round).get(e.getKey()) : null;
                String what = "round " + round + ", request " + e.getKey() + " (" + how + ")";
                if (theirs == null) {
                    return TargetJudge.of(Kind.LOOP, e.getKey(), -1, what + ": the request is not in the loop's "
                            + "groups after the round's commits");
                }
                TargetDivergence d = judge.state(e.getKey(), what + ", target state",
                        TargetJudge.RowState.of((TargetCheckpoint) e.getValue()[0]),
                        TargetJudge.RowState.of((TargetCheckpoint) theirs[0]));
                if (d != null) {
                    return d;
                }
                RowCheckpoint ours = (RowCheckpoint) e.getValue()[1];
                RowCheckpoint their = (RowCheckpoint) theirs[1];
                d = drafter(e.getKey(), what, ours, their, judge);
                if (d != null) {
                    return d;
                }
            }
        }
        return null;
    }

    private static TargetDivergence drafter(int request, String what, RowCheckpoint ours, RowCheckpoint theirs,
                                            TargetJudge judge) {
        TargetTolerance tolerance = judge.tolerance();
        if (ours.processedTokens() != theirs.processedTokens()) {
            return TargetJudge.of(Kind.LOOP, request, -1, what + ": the drafter row has P = " + theirs.processedTokens()
                    + ", the reference loop's " + ours.processedTokens());
        }
        String[] names = {"keys", "values", "hidden"};
        org.mtporacle.api.HostTensor[] a = {ours.keys(), ours.values(), ours.hidden()};
        org.mtporacle.api.HostTensor[] b = {theirs.keys(), theirs.values(), theirs.hidden()};
        for (int i = 0; i < names.length; i++) {
            float[] x = a[i] == null ? new float[0] : a[i].toFloatArray();
            float[] y = b[i] == null ? new float[0] : b[i].toFloatArray();
            double nmse = x.length != y.length ? Double.POSITIVE_INFINITY : TargetJudge.nmse(y, 0, x, 0, x.length);
            if (i < 2 && x.length > 0) {
                judge.addTypical(i == 0 ? "drafterKeys" : "drafterValues", nmse);
            }
            double bound = i < 2 ? drafterKvNmse(tolerance) : tolerance.stateNmse();
            if (!(nmse <= bound)) {
                return TargetJudge.of(Kind.LOOP, request, -1, String.format(java.util.Locale.ROOT, "%s: the drafter's "
                        + "%s NMSE %.3g > %.3g %s against the reference loop under the declared policy (spec §13.4)",
                        what, names[i], nmse, bound, tolerance.name()));
            }
        }
        return null;
    }

    /**
     * The bound on the drafter's K/V in the loop: the drafter profile's own K/V bound where the target's reading is
     * of a built-in profile ({@code bf16}: 2e-3, as loop chains hold the drafter's checkpoints; conformance/SPEC.md
     * "The loop"), never looser than the target's state bound; a profile of another name, the state bound.
     */
    static double drafterKvNmse(TargetTolerance t) {
        for (org.mtporacle.api.Tolerance d : org.mtporacle.api.Tolerance.BUILT_IN) {
            if (d.name().equals(t.name())) {
                return Math.min(d.kvNmse(), t.stateNmse());
            }
        }
        return t.stateNmse();
    }

    private static int firstDifference(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        for (int i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return i;
            }
        }
        return n;
    }
}
