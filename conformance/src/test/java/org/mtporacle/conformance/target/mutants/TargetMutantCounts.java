package org.mtporacle.conformance.target.mutants;

import org.junit.jupiter.api.Test;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.util.ArrayList;
import java.util.List;

/**
 * A measurement, not part of the suite (run it by name: {@code -Dtest=TargetMutantCounts}): for every shipped target
 * mutant under {@code f32} and {@code bf16} (the profiles taken by name; {@code -Dprofiles=bf16} for one), on the
 * mutant's fixture, the chains the kit needed to catch it (seed 7, up to {@code -Dchains=N}, 200 by default), the
 * failing chain's length and its shrunk length, and with {@code -Drate=N} how many of the fixture's first N chains
 * fail (each run whole, not stopping); for the loop mutant, the loop runs per declared policy. The dense mutants run
 * on the wide-gain {@code tiny-wide-target} too, and {@code MOE_NORM_TOPK_FLAG_IGNORED} on {@code tiny-moe-target},
 * where the flag is true and the mutant is right: the reason for its fixture. Prints a Markdown table
 * (conformance/SPEC.md's).
 */
class TargetMutantCounts {
    private static final int CHAINS = Integer.getInteger("chains", 200);
    private static final int LOOP_RUNS = 20;
    private static final int RATE = Integer.getInteger("rate", 0);
    private static final String PROFILES = System.getProperty("profiles", "f32,bf16");

    @Test
    void measure() {
        TargetTolerance[] profiles = java.util.Arrays.stream(PROFILES.split(",")).map(String::trim)
                .map(TargetTolerance::named).toArray(TargetTolerance[]::new);
        List<String> rows = new ArrayList<>();
        try (TargetMutantRuns runs = new TargetMutantRuns()) {
            for (TargetMutation m : TargetMutation.values()) {
                if (m == TargetMutation.NONE) {
                    continue;
                }
                for (TargetTolerance t : profiles) {
                    if (m == TargetMutation.KEEP_REBUILD_MIXED_UP) {
                        StringBuilder loops = new StringBuilder();
                        for (KvPolicy declared : KvPolicy.values()) {
                            TargetMutantRuns.Loop l = runs.loop(declared, t, LOOP_RUNS);
                            loops.append(loops.isEmpty() ? "" : ", ").append(l.divergence() == null
                                    ? "not caught in " + LOOP_RUNS : l.runs()).append(" (declared ")
                                    .append(declared.label()).append(')');
                        }
                        rows.add(String.format("| `%s` | tiny-target | %s | loop runs: %s | not shrunk (a loop) | — |"
                                + " — |", m, t.name(), loops));
                        continue;
                    }
                    List<String> fixtures = new ArrayList<>(List.of(m.fixture()));
                    if (m == TargetMutation.MOE_NORM_TOPK_FLAG_IGNORED) {
                        fixtures.add("tiny-moe-target");
                    }
                    if (!m.bf16Fixture().equals(m.fixture())) {
                        fixtures.add(m.bf16Fixture());
                    }
                    for (String fixture : fixtures) {
                        TargetMutantRuns.Row r = runs.row(m, fixture, t, CHAINS);
                        String rate = RATE > 0 ? runs.failing(m, fixture, t, RATE) + " of " + RATE : "—";
                        rows.add(r.failure() == null
                                ? String.format("| `%s` | %s | %s | not caught in %d | — | %s | — |", m, fixture,
                                        t.name(), r.chainsRun(), rate)
                                : String.format("| `%s` | %s | %s | %d | %d → %d | %s | %s |", m, fixture, t.name(),
                                        r.failure().chainsRun(), r.failure().originalLength(),
                                        r.failure().shrunk().size(), rate, r.failure().divergence().message()
                                                .replace("|", "/")));
                        System.out.println(rows.getLast() + "   " + r.millis() + " ms");
                    }
                }
            }
        }
        System.out.println();
        System.out.println("| mutant | fixture | profile | chains to catch | actions: failing chain → shrunk |"
                + " failing chains | first divergence (shrunk) |");
        System.out.println("|---|---|---|---|---|---|---|");
        rows.forEach(System.out::println);
    }
}
