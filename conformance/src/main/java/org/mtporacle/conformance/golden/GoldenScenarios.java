package org.mtporacle.conformance.golden;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * The named lifecycles {@code mtp golden record} freezes. Inputs are drawn from a generator seeded by the scenario
 * name, but the trace stores the concrete values, so replaying never needs the generator.
 * <ul>
 *   <li>{@code lifecycle}: cold rows, a refused draft on a cold row, two prefill chunks (the second bridges), depth-d
 *   and depth-0 rounds, no/partial/full acceptance, a refused commit, capture, filter (retire and reorder), re-append
 *   of the captured checkpoint (the engine's own and the file's tensors) beside a cold row, a prefill over restored
 *   and cold rows, retiring every row and restoring again; greedy sampling;</li>
 *   <li>{@code sampling}: seeded rows (temperature, top-k, top-p, alone and combined) beside a greedy row over several
 *   rounds with varied steps and acceptance.</li>
 * </ul>
 * The contexts are synthetic hiddens, or, given {@link TargetTaps}, the reference target's taps of the scenario's own
 * tokens (spec §13.4): a target row group follows the recorder's rows (as in lockstep), a prefill's context is the
 * target's prefill of the same tokens, a commit's the target's verify of the pending tokens and the drafts. The
 * golden then says {@code contexts: "tap"} and stores those taps; replaying it needs no target.
 */
public final class GoldenScenarios {
    public static final List<String> NAMES = List.of("lifecycle", "sampling");

    /** What {@code mtp golden record} records when given no fixture: fixture → scenarios (committed under golden/). */
    public static final Map<String, List<String>> DEFAULTS = Map.of(
            "tiny", NAMES, "tiny-q4", List.of("lifecycle"), "small", NAMES, "tiny-moe", List.of("lifecycle"),
            "tiny-moe-q4", List.of("lifecycle"));

    /** The fixtures of {@link #DEFAULTS}, in the order {@code mtp golden record} records them. */
    public static final List<String> DEFAULT_FIXTURES = List.of("tiny", "tiny-q4", "small", "tiny-moe", "tiny-moe-q4");

    /** The numerics goldens are recorded and judged in. */
    public static final String NUMERICS = "f32, scalar kernels (the reference's defining accumulation order)";

    private GoldenScenarios() {
    }

    /**
     * Records {@code scenario} on {@code model} (of fixture recipe {@code fixture}, or null for a model directory)
     * and writes {@code <name>.json} and {@code <name>.safetensors} into {@code out}.
     *
     * @throws MtpException INVALID_ARGUMENT for an unknown scenario
     */
    public static Path record(MtpModel model, String fixture, String scenario, Path out) {
        return record(model, fixture, scenario, out, null);
    }

    /**
     * The name of the golden {@link #record} writes ({@code <name>.json}, {@code <name>.safetensors}): the fixture (or
     * {@code model}), the scenario, and {@code -tap-pre} or {@code -tap-post} for target contexts ({@code tap} null:
     * synthetic).
     */
    public static String name(String fixture, String scenario, String tap) {
        return (fixture == null ? "model" : fixture) + "-" + scenario + (tap == null ? "" : "-tap-" + tap);
    }

    /**
     * As {@link #record(MtpModel, String, String, Path)}, with the contexts of {@code taps} (null: synthetic); the
     * golden's name then ends in {@code -tap-pre} or {@code -tap-post}.
     */
    public static Path record(MtpModel model, String fixture, String scenario, Path out, TargetTaps taps) {
        Consumer<Script> body = switch (scenario) {
            case "lifecycle" -> GoldenScenarios::lifecycle;
            case "sampling" -> GoldenScenarios::sampling;
            default -> throw MtpException.invalidArgument("golden record: unknown scenario '" + scenario
                    + "', expected one of " + NAMES);
        };
        String name = name(fixture, scenario, taps == null ? null : taps.tap().label());
        if (taps != null) {
            taps.checkFits(model);
        }
        // the scalar kernels are the reference's definition: their bits do not depend on the CPU's vector width
        try (ReferenceDraftModel ref = ReferenceBackend.load(model, KernelMode.SCALAR,
                Runtime.getRuntime().availableProcessors()); GoldenRecorder rec = new GoldenRecorder(ref);
             TargetRows target = taps == null ? null : taps.target().openRows(List.of())) {
            // the random stream does not depend on the contexts: a target golden has its synthetic twin's tokens
            Script s = new Script(rec, model.config(), new SplittableRandom((fixture == null ? "model" : fixture)
                    .concat("-").concat(scenario).hashCode()), target, taps == null ? null : taps.tap());
            body.accept(s);
            GoldenRecorder.Recording r = rec.finish();
            String description = switch (scenario) {
                case "lifecycle" -> "cold/restored rows, prefill chunks with bridge, depth 0 and d rounds, "
                        + "none/partial/full acceptance, filter/reorder/retire, capture and re-append, refused calls";
                default -> "seeded sampling (temperature, top-k, top-p) beside greedy rows over several rounds";
            };
            GoldenTrace t = new GoldenTrace(name, description + " on " + (fixture == null ? model.source() : fixture)
                    + (taps == null ? "" : "; contexts: the reference target's " + taps.tap().label()
                    + "-norm taps of these tokens"),
                    new GoldenTrace.ModelRef(fixture, fixture == null ? model.source() : null, model.identity(),
                            model.config()),
                    new GoldenTrace.Options(taps == null ? "synthetic" : "tap", taps == null ? null
                            : taps.tap().label() + "-norm", r.sampling(), ReferenceBackend.NAME,
                            Map.of("mode", "scalar"), NUMERICS, "exact"), null, null, r.steps());
            return GoldenFiles.write(t, r.tensors(), out);
        }
    }

    /**
     * Scenario helpers: concrete inputs from a seeded generator, recorded through {@link GoldenRecorder}; with a
     * {@code target}, its rows follow every call the recorder's rows accept and give the contexts.
     */
    private static final class Script {
        private final GoldenRecorder rec;
        private final MtpConfig c;
        private final SplittableRandom rnd;
        private final TargetRows target; // null with synthetic contexts
        private final HiddenTap tap;
        private final Map<String, TargetCheckpoint> captured = new HashMap<>();
        private TargetOutput round; // the target's verify of the open round

        Script(GoldenRecorder rec, MtpConfig c, SplittableRandom rnd, TargetRows target, HiddenTap tap) {
            this.rec = rec;
            this.c = c;
            this.rnd = rnd;
            this.target = target;
            this.tap = tap;
        }

        SplittableRandom rnd() {
            return rnd;
        }

        void append(Source... sources) {
            if (rec.append(sources) && target != null) {
                List<TargetCheckpoint> cps = new ArrayList<>();
                for (Source src : sources) {
                    cps.add(src.checkpoint() == null ? null : captured.get(src.checkpoint()));
                }
                target.append(cps);
            }
        }

        void filter(int... keep) {
            if (rec.filter(keep) && target != null) {
                target.filterRows(keep);
            }
        }

        void capture(int row, String id) {
            if (rec.capture(row, id) && target != null) {
                captured.put(id, target.capture(row));
            }
        }

        void prefill(int length) {
            int b = rec.rowCount();
            int[][] tokens = new int[b][length];
            for (int[] row : tokens) {
                for (int i = 0; i < length; i++) {
                    row[i] = rnd.nextInt(c.vocabSize());
                }
            }
            HostTensor context = ChainData.hiddens(rnd, b, length, c.hiddenSize());
            boolean mirrored = target != null && b > 0 && round == null;
            if (mirrored) {
                context = target.prefill(HostTensor.ofIntRows(tokens)).taps(tap);
            }
            if (!rec.prefill(tokens, context) && mirrored) {
                throw new IllegalStateException("golden scenario: a prefill the target took was refused");
            }
        }

        void draft(int depth, List<RowSampler> samplers) {
            int b = samplers.size();
            int[] pending = new int[b];
            long[] steps = new long[b];
            for (int r = 0; r < b; r++) {
                pending[r] = rnd.nextInt(c.vocabSize());
                steps[r] = rnd.nextInt(500);
            }
            int[][] drafted = rec.draft(pending, depth, steps, samplers);
            if (drafted != null && target != null) {
                int[][] tokens = new int[b][depth + 1];
                for (int r = 0; r < b; r++) {
                    tokens[r][0] = pending[r];
                    System.arraycopy(drafted[r], 0, tokens[r], 1, depth);
                }
                round = target.verify(HostTensor.ofIntRows(tokens));
            }
        }

        void greedy(int depth) {
            RowSampler[] s = new RowSampler[rec.rowCount()];
            Arrays.fill(s, RowSampler.GREEDY);
            draft(depth, List.of(s));
        }

        void commit(int depth, int... accepted) {
            HostTensor synthetic = ChainData.hiddens(rnd, accepted.length, depth + 1, c.hiddenSize());
            if (rec.commit(accepted, round == null ? synthetic : round.taps(tap)) && round != null) {
                target.commit(accepted);
                round = null;
            }
        }
    }

    private static void lifecycle(Script s) {
        s.append(Source.COLD, Source.COLD, Source.COLD);
        s.greedy(2);                                   // refused: cold rows have no hidden (ILLEGAL_STATE)
        s.prefill(6);
        s.prefill(3);                                  // second chunk: every row bridges its retained hidden
        s.greedy(3);
        s.commit(3, 9, 0, 0);                          // refused: accepted > depth (INVALID_ARGUMENT), round stays open
        s.commit(3, 0, 3, 2);                          // none, full, partial
        s.greedy(0);
        s.commit(0, 0, 0, 0);                          // depth-0 round
        s.capture(1, "c0");
        s.greedy(2);
        s.commit(2, 2, 1, 0);
        s.filter(2, 0);                                // retire row 1, reorder the others
        s.append(new Source("c0", false), Source.COLD, new Source("c0", true));
        s.prefill(4);                                  // restored rows bridge, the cold row starts
        s.greedy(4);
        s.commit(4, 4, 0, 1, 3, 2);
        s.capture(3, "c1");
        s.filter();                                    // retire every row
        s.append(new Source("c1", false), new Source("c0", true));
        s.greedy(1);
        s.commit(1, 1, 0);
        s.greedy(5);
        s.commit(5, 5, 2);
        s.capture(0, "c2");
    }

    private static void sampling(Script s) {
        s.append(Source.COLD, Source.COLD, Source.COLD, Source.COLD);
        s.prefill(5);
        List<RowSampler> samplers = new ArrayList<>(List.of(
                RowSampler.of(0.8, 0, 1.0, s.rnd().nextLong()),
                RowSampler.of(1.2, 20, 1.0, s.rnd().nextLong()),
                RowSampler.of(0.7, 0, 0.9, s.rnd().nextLong()),
                RowSampler.GREEDY));
        int[][] accepted = {{3, 0, 1, 2}, {1, 3, 3, 0}, {0, 2, 3, 3}};
        for (int[] acc : accepted) {
            s.draft(3, samplers);
            s.commit(3, acc);
        }
        samplers.set(3, RowSampler.of(1.0, 8, 0.95, s.rnd().nextLong()));
        s.draft(1, samplers);
        s.commit(1, 1, 0, 1, 1);
        s.capture(2, "c0");
        s.filter(3, 1);
        s.append(new Source("c0", true));
        s.draft(4, List.of(samplers.get(3), samplers.get(1), samplers.get(2)));
        s.commit(4, 4, 1, 2);
    }
}
