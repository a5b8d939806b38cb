package org.mtporacle.conformance.report;

import org.mtporacle.api.Tolerance;

import java.util.List;
import java.util.Map;

/**
 * What {@code mtp conform} found: one entry per backend profile × fixture. Written as {@code report.json} (this
 * record, by Jackson), {@code report.html} and a console summary; shard reports merge entry by entry.
 *
 * @param tool       the tool and version that wrote it
 * @param seed       the campaign seed; with {@code chains} and the shard it determines every chain
 * @param shards     the shards merged into this report, as {@code "K/N"}
 * @param contexts   where the hiddens fed to prefill/commit come from (synthetic, or a target and its tap)
 */
public record ConformReport(String tool, String created, long seed, int chains, List<String> shards, String contexts,
                            List<Entry> entries) {
    public ConformReport {
        shards = List.copyOf(shards);
        entries = List.copyOf(entries);
    }

    /** PASSED, FAILED or UNAVAILABLE (not counted as a failure, reason given). */
    public enum Status { PASSED, FAILED, UNAVAILABLE }

    /** One backend profile on one fixture. */
    public record Entry(String backend, String profile, Map<String, String> options, String fixture,
                        String fixtureRecipe, String modelIdentity, Tolerance tolerance, String numerics,
                        Status status, String reason, long chainsRun, long passed, double seconds, Stats stats,
                        List<FailureRecord> failures) {
        public Entry {
            options = Map.copyOf(options);
            failures = List.copyOf(failures);
        }

        public String key() {
            return profile + " @ " + fixture;
        }
    }

    /** Totals and worst values over an entry's chains (the thresholds they are held to are the entry's tolerance). */
    public record Stats(long comparedTokens, long nearTies, long comparedCheckpoints, double maxKvNmse,
                        double maxHiddenNmse, long badCalls, double maxNearTieGap) {
    }

    /** A shrunk failure: the divergence and its trace. */
    public record FailureRecord(long chainSeed, int originalLength, List<String> shrunkActions, int actionIndex,
                                String category, String message, Map<String, Object> details, String trace) {
        public FailureRecord {
            shrunkActions = List.copyOf(shrunkActions);
            details = Map.copyOf(details);
        }
    }

    /** True when no entry failed. */
    public boolean ok() {
        return entries.stream().noneMatch(e -> e.status() == Status.FAILED);
    }
}
