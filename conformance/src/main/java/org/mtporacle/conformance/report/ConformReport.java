package org.mtporacle.conformance.report;

import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseHistogram;

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
 * @param plan       the rest of what identifies the campaign: shard count, chain length, the names asked for
 * @param missingShards shards of the campaign a partial merge did not hold (empty when complete)
 * @param unfinished the entries, as {@code "K/N: profile @ fixture"}, that had not finished when this report was
 *                   written: {@code mtp conform} rewrites its report after every entry, so a run stopped early (a CI
 *                   time limit, a lost machine) leaves what it finished, and says what it did not (empty when complete)
 * @param pooled     for a pool of campaigns ({@code mtp conform merge --pool}), the command that runs each again, in
 *                   the order pooled; empty for one campaign (its seed, chains and plan are then the campaign's)
 */
public record ConformReport(String tool, String created, long seed, int chains, List<String> shards, String contexts,
                            List<Entry> entries, Plan plan, List<String> missingShards, List<String> unfinished,
                            List<String> pooled) {
    public ConformReport {
        shards = shards == null ? List.of() : List.copyOf(shards);
        entries = entries == null ? List.of() : List.copyOf(entries);
        plan = plan == null ? Plan.unknown(shards) : plan;
        missingShards = missingShards == null ? List.of() : List.copyOf(missingShards);
        unfinished = unfinished == null ? List.of() : List.copyOf(unfinished);
        pooled = pooled == null ? List.of() : List.copyOf(pooled);
    }

    /** A report of one campaign (not a pool). */
    public ConformReport(String tool, String created, long seed, int chains, List<String> shards, String contexts,
                         List<Entry> entries, Plan plan, List<String> missingShards, List<String> unfinished) {
        this(tool, created, seed, chains, shards, contexts, entries, plan, missingShards, unfinished, List.of());
    }

    /** A finished report (nothing unfinished). */
    public ConformReport(String tool, String created, long seed, int chains, List<String> shards, String contexts,
                         List<Entry> entries, Plan plan, List<String> missingShards) {
        this(tool, created, seed, chains, shards, contexts, entries, plan, missingShards, List.of());
    }

    /** This report with {@code options} (command-line words that changed the run) added to its plan. */
    public ConformReport withOptions(List<String> options) {
        return options.isEmpty() ? this : new ConformReport(tool, created, seed, chains, shards, contexts, entries,
                plan.withOptions(options), missingShards, unfinished, pooled);
    }

    /** Whether a shard is missing or an entry did not finish: the report covers less than its campaign. */
    public boolean isPartial() {
        return !missingShards.isEmpty() || !unfinished.isEmpty();
    }

    /** A report of one run (no plan recorded: one shard, names unknown). */
    public ConformReport(String tool, String created, long seed, int chains, List<String> shards, String contexts,
                         List<Entry> entries) {
        this(tool, created, seed, chains, shards, contexts, entries, null, List.of());
    }

    /**
     * What, beside the seed and chain count, makes two reports shards of one campaign.
     *
     * @param shardCount N of {@code --shard K/N} (1 when not sharded)
     * @param maxActions the longest chain
     * @param backends   the backend names asked for ({@code --backend}); empty when every backend found was run
     * @param fixtures   the fixtures run, by name
     * @param options    the other options that changed what ran, as the command line's words ({@code --calibrate},
     *                   {@code --kv rebuild}, {@code --timeout 120}, {@code --plugin JAR}); empty in reports that
     *                   predate the field
     */
    public record Plan(int shardCount, int maxActions, List<String> backends, List<String> fixtures,
                       List<String> options) {
        public Plan {
            backends = backends == null ? List.of() : List.copyOf(backends);
            fixtures = fixtures == null ? List.of() : List.copyOf(fixtures);
            options = options == null ? List.of() : List.copyOf(options);
        }

        /** A plan with no other options. */
        public Plan(int shardCount, int maxActions, List<String> backends, List<String> fixtures) {
            this(shardCount, maxActions, backends, fixtures, List.of());
        }

        /** This plan with {@code more} options after its own. */
        public Plan withOptions(List<String> more) {
            List<String> all = new java.util.ArrayList<>(options);
            all.addAll(more);
            return new Plan(shardCount, maxActions, backends, fixtures, all);
        }

        static Plan unknown(List<String> shards) {
            int n = 1;
            if (!shards.isEmpty()) {
                try {
                    n = Integer.parseInt(shards.getFirst().substring(shards.getFirst().indexOf('/') + 1));
                } catch (NumberFormatException e) {
                    n = 0; // not a K/N: merge refuses it, naming the file
                }
            }
            return new Plan(n, 0, List.of(), List.of());
        }
    }

    /** The run's outcome, for the exit code: a backend asked for by name and unavailable fails the run. */
    public enum Verdict { PASSED, FAILED, UNAVAILABLE }

    public Verdict verdict() {
        if (!unavailableRequested().isEmpty()) {
            return Verdict.UNAVAILABLE;
        }
        return entries.stream().anyMatch(e -> e.status() == Status.FAILED) ? Verdict.FAILED : Verdict.PASSED;
    }

    /** Entries that could not run although their backend was asked for by name. */
    public List<Entry> unavailableRequested() {
        if (plan.backends().isEmpty()) {
            return List.of();
        }
        return entries.stream().filter(e -> e.status() == Status.UNAVAILABLE).toList();
    }

    /** PASSED, FAILED or UNAVAILABLE (not counted as a failure, reason given). */
    public enum Status { PASSED, FAILED, UNAVAILABLE }

    /** One backend profile on one fixture. */
    public record Entry(String backend, String profile, Map<String, String> options, String fixture,
                        String fixtureRecipe, String modelIdentity, Tolerance tolerance, String numerics,
                        Status status, String reason, long chainsRun, long passed, double seconds, Stats stats,
                        List<FailureRecord> failures) {
        public Entry {
            options = options == null ? Map.of() : Map.copyOf(options);
            failures = failures == null ? List.of() : List.copyOf(failures);
        }

        public String key() {
            return profile + " @ " + fixture;
        }

        /**
         * The worst K/V NMSE seen: the campaign's, or a failure's when larger (a shrunk chain is another chain and
         * may diverge further than any the campaign compared).
         */
        public double worstKvNmse() {
            return worst(stats == null ? 0 : stats.maxKvNmse(), java.util.Set.of("keys", "values"));
        }

        /** The worst hidden NMSE seen, as {@link #worstKvNmse()}. */
        public double worstHiddenNmse() {
            return worst(stats == null ? 0 : stats.maxHiddenNmse(), java.util.Set.of("hidden"));
        }

        private double worst(double campaign, java.util.Set<String> tensors) {
            double w = campaign;
            for (FailureRecord f : failures) {
                double n = f.nmse(tensors);
                if (n > w) {
                    w = n;
                }
            }
            return w;
        }
    }

    /**
     * Totals and worst values over an entry's chains (the thresholds they are held to are the entry's tolerance);
     * {@code nearTieGaps[i]} counts the near-ties whose gap fell in
     * the i-th tenth of the profile's token allowance (empty in reports written before it was recorded).
     */
    public record Stats(long comparedTokens, long nearTies, long comparedCheckpoints, double maxKvNmse,
                        double maxHiddenNmse, long badCalls, double maxNearTieGap, List<Long> nearTieGaps,
                        GapData gaps, org.mtporacle.conformance.compare.RouterTally router,
                        Map<String, NmseData> nmse) {
        public Stats {
            nearTieGaps = nearTieGaps == null ? List.of() : List.copyOf(nearTieGaps);
            router = router == null ? org.mtporacle.conformance.compare.RouterTally.NONE : router;
            nmse = nmse == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(nmse));
        }

        /** Stats without NMSE distributions (a drafter run). */
        public Stats(long comparedTokens, long nearTies, long comparedCheckpoints, double maxKvNmse,
                     double maxHiddenNmse, long badCalls, double maxNearTieGap, List<Long> nearTieGaps,
                     GapData gaps, org.mtporacle.conformance.compare.RouterTally router) {
            this(comparedTokens, nearTies, comparedCheckpoints, maxKvNmse, maxHiddenNmse, badCalls, maxNearTieGap,
                    nearTieGaps, gaps, router, null);
        }

        /** Stats without router comparisons (a dense layer, or a backend that does not report its choices). */
        public Stats(long comparedTokens, long nearTies, long comparedCheckpoints, double maxKvNmse,
                     double maxHiddenNmse, long badCalls, double maxNearTieGap, List<Long> nearTieGaps,
                     GapData gaps) {
            this(comparedTokens, nearTies, comparedCheckpoints, maxKvNmse, maxHiddenNmse, badCalls, maxNearTieGap,
                    nearTieGaps, gaps, null);
        }

        public Stats(long comparedTokens, long nearTies, long comparedCheckpoints, double maxKvNmse,
                     double maxHiddenNmse, long badCalls, double maxNearTieGap) {
            this(comparedTokens, nearTies, comparedCheckpoints, maxKvNmse, maxHiddenNmse, badCalls, maxNearTieGap,
                    List.of(), GapData.of(new GapHistogram()), null);
        }

        /** Stats of an entry that compared nothing. */
        public static Stats none() {
            return new Stats(0, 0, 0, 0, 0, 0, 0);
        }
    }

    /**
     * The reference's log-prob gaps at every compared greedy position ({@link GapHistogram}): counts of agreeing and
     * differing positions per bin of {@code binWidth}, the counts at or past the histogram's range, and the largest
     * gap at which the backend differed. What the token allowance is derived from (conformance/SPEC.md).
     */
    public record GapData(double binWidth, long[] agree, long[] differ, long agreeBeyond, long differBeyond,
                          double maxDifferGap) {
        public static GapData of(GapHistogram h) {
            return new GapData(GapHistogram.BIN, h.agreeCounts(), h.differCounts(), h.agreeBeyond(),
                    h.differBeyond(), h.maxDifferGap());
        }

        /** The counts by value (a record prints arrays as {@code [J@57adfab0}). */
        @Override
        public String toString() {
            return "GapData[binWidth=" + binWidth + ", agree=" + java.util.Arrays.toString(agree) + ", differ="
                    + java.util.Arrays.toString(differ) + ", agreeBeyond=" + agreeBeyond + ", differBeyond="
                    + differBeyond + ", maxDifferGap=" + maxDifferGap + "]";
        }

        /** The histogram again; null when the counts are not of this build's bins (a report of another version). */
        public GapHistogram histogram() {
            if (agree == null || differ == null || binWidth != GapHistogram.BIN
                    || agree.length != GapHistogram.agreeCountsLength() || differ.length != agree.length) {
                return null;
            }
            return GapHistogram.of(agree, differ, agreeBeyond, differBeyond, maxDifferGap);
        }
    }

    /**
     * The NMSEs of one kind of compared tensor ({@link NmseHistogram}): counts per bin of {@code log10 NMSE},
     * {@code binsPerDecade} bins from {@code 10^low}, the counts below and above the range, and the largest value.
     * What a target's NMSE bounds are derived from (conformance/SPEC.md "Deriving the target's bf16 bounds").
     */
    public record NmseData(int binsPerDecade, int low, long[] counts, long below, long above, double max) {
        public static NmseData of(NmseHistogram h) {
            return new NmseData(NmseHistogram.BINS_PER_DECADE, NmseHistogram.LOW, h.counts(), h.below(), h.above(),
                    h.max());
        }

        /** The histogram again; null when the counts are not of this build's bins. */
        public NmseHistogram histogram() {
            if (counts == null || binsPerDecade != NmseHistogram.BINS_PER_DECADE || low != NmseHistogram.LOW
                    || counts.length != (NmseHistogram.HIGH - NmseHistogram.LOW) * NmseHistogram.BINS_PER_DECADE) {
                return null;
            }
            return NmseHistogram.of(counts, below, above, max);
        }

        /** The counts by value. */
        @Override
        public String toString() {
            return "NmseData[binsPerDecade=" + binsPerDecade + ", low=" + low + ", counts="
                    + java.util.Arrays.toString(counts) + ", below=" + below + ", above=" + above + ", max=" + max
                    + "]";
        }
    }

    /** A shrunk failure: the divergence and its trace. */
    public record FailureRecord(long chainSeed, int originalLength, List<String> shrunkActions, int actionIndex,
                                String category, String message, Map<String, Object> details, String trace) {
        public FailureRecord {
            shrunkActions = shrunkActions == null ? List.of() : List.copyOf(shrunkActions);
            // in the order the evidence gave them (Divergence.Evidence#facts), so tables read the same every run
            details = details == null ? Map.of() : java.util.Collections.unmodifiableMap(
                    new java.util.LinkedHashMap<>(details));
        }

        /** The NMSE this failure's evidence records for a tensor named in {@code tensors}; NaN when none. */
        double nmse(java.util.Set<String> tensors) {
            return details.get("nmse") instanceof Number n && tensors.contains(String.valueOf(details.get("tensor")))
                    ? n.doubleValue() : Double.NaN;
        }
    }

    /** True when every entry asked for ran and passed (unavailable ones only on a run that named none). */
    public boolean ok() {
        return verdict() == Verdict.PASSED;
    }
}
