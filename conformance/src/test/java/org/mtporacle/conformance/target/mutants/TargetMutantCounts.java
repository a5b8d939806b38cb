package org.mtporacle.conformance.target.mutants;

import org.junit.jupiter.api.Test;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.util.ArrayList;
import java.util.List;

/**
 * A measurement, not part of the suite (run it by name: {@code -Dtest=TargetMutantCounts}): for every shipped target
 * mutant under {@code f32} and {@code bf16} (the profile taken by name), on the mutant's fixture, the chains the kit
 * needed to catch it (seed 7, up to {@code -Dchains=N}, 200 by default), the failing chain's length and its shrunk
 * length; for the loop mutant, the loop runs per declared policy. Prints a Markdown table (conformance/SPEC.md's).
 */
class TargetMutantCounts {
    private static final int CHAINS = Integer.getInteger("chains", 200);
    private static final int LOOP_RUNS = 20;

    @Test
    void measure() {
        TargetTolerance[] profiles = {TargetTolerance.F32, TargetTolerance.named("bf16")};
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
                        rows.add(String.format("| `%s` | tiny-target | %s | loop runs: %s | loop check, not shrunk |",
                                m, t.name(), loops));
                        continue;
                    }
                    TargetMutantRuns.Row r = runs.row(m, m.fixture(), t, CHAINS);
                    rows.add(r.failure() == null
                            ? String.format("| `%s` | %s | %s | not caught in %d | — |", m, r.fixture(), t.name(),
                                    r.chainsRun())
                            : String.format("| `%s` | %s | %s | %d | %d → %d (%s) |", m, r.fixture(), t.name(),
                                    r.failure().chainsRun(), r.failure().originalLength(),
                                    r.failure().shrunk().size(), r.failure().divergence().kind()));
                    System.out.println(rows.getLast() + "   " + r.millis() + " ms");
                }
            }
        }
        System.out.println();
        System.out.println("| mutant | fixture | profile | chains to catch | actions: failing chain → shrunk |");
        System.out.println("|---|---|---|---|---|");
        rows.forEach(System.out::println);
    }
}
