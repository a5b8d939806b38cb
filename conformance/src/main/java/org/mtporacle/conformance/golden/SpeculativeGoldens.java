package org.mtporacle.conformance.golden;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Request;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The speculative runs {@code mtp golden record --speculative} freezes, on a target fixture, recorded on the reference
 * in its scalar mode (target and drafter):
 * <ul>
 *   <li>{@code speculative-keep}: post-norm tap, drafter KV {@code keep}; a greedy request from round 0, a seeded one
 *   (temperature, top-k, top-p) joining at round 1 beside a one-token request that finishes at its prefill, a top-p
 *   request joining at round 3; depths 3, 0, 2, 4, 1, 0, 3; every row captured and restored in reverse order after
 *   round 2;</li>
 *   <li>{@code speculative-rebuild}: pre-norm tap, drafter KV {@code rebuild}; two greedy requests from round 0 (one
 *   long prompt) and a seeded one joining at round 2; depths 2, 4, 0, 3, 1; restores after rounds 1 and 4.</li>
 * </ul>
 * Prompts are drawn from a generator seeded by the golden's name; the golden stores them. Recording asserts the defining
 * property: every request's speculative output equals its plain decoding on the same target.
 */
public final class SpeculativeGoldens {
    public static final List<String> NAMES = List.of("speculative-keep", "speculative-rebuild");

    /** What {@code mtp golden record --speculative} records with no fixture given (committed under golden/). */
    public static final List<String> DEFAULT_FIXTURES = List.of("tiny-target");

    private SpeculativeGoldens() {
    }

    /** The golden's name: the fixture, then the scenario. */
    public static String name(String fixture, String scenario) {
        return fixture + "-" + scenario;
    }

    /**
     * Records {@code scenario} on target fixture {@code fx} and writes {@code <name>.json} into {@code out}.
     *
     * @throws MtpException INVALID_ARGUMENT for an unknown scenario
     */
    public static Path record(TargetFixture fx, String scenario, Path out) {
        if (!NAMES.contains(scenario)) {
            throw MtpException.invalidArgument("golden record: unknown speculative scenario '" + scenario
                    + "', expected one of " + NAMES);
        }
        String name = name(fx.name(), scenario);
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        int vocab = fx.target().config().shape().vocabSize();
        boolean keep = scenario.equals("speculative-keep");
        List<Request> requests = keep ? List.of(
                new Request(prompt(rnd, vocab, 7), RowSampler.GREEDY, 14, 0),
                new Request(prompt(rnd, vocab, 3), RowSampler.of(0.8, 20, 0.95, rnd.nextLong()), 10, 1),
                new Request(prompt(rnd, vocab, 1), RowSampler.GREEDY, 1, 1),
                new Request(prompt(rnd, vocab, 5), RowSampler.of(1.0, 0, 0.9, rnd.nextLong()), 8, 3))
                : List.of(
                new Request(prompt(rnd, vocab, 4), RowSampler.GREEDY, 12, 0),
                new Request(prompt(rnd, vocab, 70), RowSampler.GREEDY, 9, 0),
                new Request(prompt(rnd, vocab, 2), RowSampler.of(0.7, 0, 1.0, rnd.nextLong()), 10, 2));
        int[] depths = keep ? new int[] {3, 0, 2, 4, 1, 0, 3} : new int[] {2, 4, 0, 3, 1};
        int[] restore = keep ? new int[] {2} : new int[] {1, 4};
        HiddenTap tap = keep ? HiddenTap.POST_NORM : HiddenTap.PRE_NORM;
        KvPolicy policy = keep ? KvPolicy.KEEP : KvPolicy.REBUILD;
        int threads = Runtime.getRuntime().availableProcessors();
        // the scalar kernels are the reference's definition: their bits do not depend on the CPU's vector width
        try (ReferenceTarget target = new ReferenceTarget(fx.target(), new Kernels(KernelMode.SCALAR, threads));
             ReferenceDraftModel drafter = ReferenceBackend.load(fx.drafter(), KernelMode.SCALAR, threads)) {
            SpeculativeGolden shell = new SpeculativeGolden(name, "", fx.name(), fx.target().identity(),
                    fx.drafter().identity(), tap, policy, depths, restore, ReferenceBackend.NAME,
                    Map.of("mode", "scalar"), GoldenScenarios.NUMERICS, "exact", requests, List.of(), List.of());
            SpeculativeRun.Result run = SpeculativeRun.run(target, drafter, requests, shell.options());
            List<int[]> plain = SpeculativeRun.plain(target, requests);
            for (int q = 0; q < requests.size(); q++) {
                if (!Arrays.equals(plain.get(q), run.outputs().get(q))) {
                    throw new IllegalStateException("golden record " + name + ": request " + q + " speculative "
                            + Arrays.toString(run.outputs().get(q)) + " != plain " + Arrays.toString(plain.get(q))
                            + " on the reference (spec §13.4)");
                }
            }
            String description = "a whole speculative run on " + fx.name() + ": tap " + tap.label() + ", drafter KV "
                    + policy.label() + ", " + requests.size() + " requests (greedy and seeded) joining at rounds "
                    + requests.stream().map(q -> Integer.toString(q.joinRound())).distinct().toList()
                    + ", zero-draft rounds, restores after rounds " + Arrays.toString(restore)
                    + "; speculative == plain decoding for every request";
            return new SpeculativeGolden(name, description, fx.name(), fx.target().identity(),
                    fx.drafter().identity(), tap, policy, depths, restore, ReferenceBackend.NAME,
                    Map.of("mode", "scalar"), GoldenScenarios.NUMERICS, "exact", requests, run.rounds(),
                    run.outputs()).write(out);
        }
    }

    private static int[] prompt(SplittableRandom rnd, int vocab, int length) {
        int[] p = new int[length];
        for (int i = 0; i < length; i++) {
            p[i] = rnd.nextInt(vocab);
        }
        return p;
    }

    /** How many of {@code golden}'s rows accepted none, some and all of their drafts (zero-draft rows apart). */
    static int[] acceptance(SpeculativeGolden golden) {
        int[] out = new int[4];
        for (SpeculativeRun.Round r : golden.rounds()) {
            for (SpeculativeRun.Row w : r.rows()) {
                out[r.depth() == 0 ? 3 : w.accepted() == 0 ? 0 : w.accepted() == r.depth() ? 2 : 1]++;
            }
        }
        return out;
    }

}
