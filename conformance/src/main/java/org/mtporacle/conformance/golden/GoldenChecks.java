package org.mtporacle.conformance.golden;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.golden.GoldenFiles.Golden;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a parsed golden must contain before it is replayed (golden/README.md, "expect"): every observable its steps
 * must record is there, with one entry per row and per draft position; no observable sits where verification cannot
 * check it (on a refused step, or on a step of another op); a row state's digest agrees with the tensors stored for
 * it; the options agree with the steps; and the model it names is the model it was given. Any miss is
 * MALFORMED_FILE naming the step and field, so a trace never passes with fewer comparisons than it claims.
 */
final class GoldenChecks {
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final Set<String> KINDS = Set.of(Arrays.stream(MtpException.Kind.values()).map(Enum::name)
            .toArray(String[]::new));

    private final Golden golden;
    private final String file;

    private GoldenChecks(Golden golden) {
        this.golden = golden;
        this.file = "golden " + golden.file() + ": ";
    }

    /**
     * Checks {@code golden} against the structure rules and the model it is replayed on.
     *
     * @throws MtpException MALFORMED_FILE naming the step and field
     */
    static void check(Golden golden, String modelIdentity, MtpConfig modelConfig, MlpWeights mlp) {
        GoldenChecks c = new GoldenChecks(golden);
        c.model(modelIdentity, modelConfig);
        c.options();
        List<Step> steps = golden.trace().steps();
        c.routerChoices(steps, mlp instanceof MlpWeights.Moe moe ? moe : null);
        Set<String> captures = new HashSet<>();
        Set<String> fileCheckpoints = new HashSet<>();
        for (int i = 0; i < steps.size(); i++) {
            c.step(i, steps.get(i), captures, fileCheckpoints);
            if (steps.get(i) instanceof GoldenTrace.Capture cap) {
                captures.add(cap.id());
            }
        }
    }

    private MtpException bad(String where, String what) {
        return MtpException.malformedFile(file + where + ": " + what + " (golden/README.md)");
    }

    private void model(String identity, MtpConfig config) {
        GoldenTrace.ModelRef m = golden.trace().model();
        if (!m.identity().equals(identity)) {
            throw bad("model.identity", UntrustedText.digestPrefix(m.identity()) + ", the model given has " + identity);
        }
        if (!m.config().equals(config)) {
            throw bad("model.config", m.config() + " does not describe the model of that identity, " + config);
        }
    }

    private void options() {
        GoldenTrace.Options o = golden.trace().options();
        switch (o.contexts()) {
            case "synthetic" -> {
                if (o.tap() != null) {
                    throw bad("options.tap", UntrustedText.quote(o.tap()) + " with contexts 'synthetic', expected null");
                }
            }
            case "tap" -> {
                if (!"pre-norm".equals(o.tap()) && !"post-norm".equals(o.tap())) {
                    throw bad("options.tap", UntrustedText.quote(o.tap()) + ", expected pre-norm or post-norm");
                }
            }
            default -> throw bad("options.contexts", UntrustedText.quote(o.contexts()) + ", expected synthetic or tap");
        }
        boolean seeded = false;
        boolean greedy = false;
        for (Step s : golden.trace().steps()) {
            if (s instanceof GoldenTrace.Draft d) {
                for (RowSampler r : d.samplers()) {
                    seeded |= !r.isGreedy();
                    greedy |= r.isGreedy();
                }
            }
        }
        String sampling = seeded && greedy ? "mixed" : seeded ? "seeded" : "greedy";
        if (!sampling.equals(o.sampling())) {
            throw bad("options.sampling", UntrustedText.quote(o.sampling()) + ", the draft steps' samplers make it '" + sampling
                    + "'");
        }
    }

    private void step(int i, Step s, Set<String> captures, Set<String> fileCheckpoints) {
        String where = "steps[" + i + "]";
        Expect x = s.expect();
        if (x.rowCount() < 0) {
            throw bad(where + ".expect.rowCount", x.rowCount() + " is negative");
        }
        if (s instanceof GoldenTrace.Append a) {
            for (int r = 0; r < a.rows().size(); r++) {
                Source src = a.rows().get(r);
                if (src.checkpoint() != null && !(src.fromFile() ? fileCheckpoints : captures)
                        .contains(src.checkpoint())) {
                    throw bad(where + ".rows[" + r + "].checkpoint", UntrustedText.quote(src.checkpoint()) + " from the "
                            + (src.fromFile() ? "file" : "capture") + ", but no earlier capture step "
                            + (src.fromFile() ? "stores" : "is") + " it");
                }
            }
        }
        if (x.error() != null) {
            if (!KINDS.contains(x.error())) {
                throw bad(where + ".expect.error", UntrustedText.quote(x.error()) + " is not a contract error kind " + KINDS);
            }
            for (String f : present(x)) {
                throw bad(where + ".expect." + f, "present on a step refused with " + x.error() + " (a refused call "
                        + "has no observable but rowCount)");
            }
            return;
        }
        String required = switch (s) {
            case GoldenTrace.Draft d -> "tokens";
            case GoldenTrace.Capture c -> "checkpoint";
            default -> "rows";
        };
        for (String f : present(x)) {
            if (!f.equals(required) && !(required.equals("tokens") && (f.equals("logprobs") || f.equals("top2Gaps")))
                    && !(f.equals("experts") && computes(s))) {
                throw bad(where + ".expect." + f, "not an observable of " + s.op() + ", which records '" + required
                        + "'");
            }
        }
        if (!present(x).contains(required)) {
            throw bad(where + ".expect." + required, "missing: a successful " + s.op() + " records it");
        }
        switch (s) {
            case GoldenTrace.Draft d -> tokens(where, d, x);
            case GoldenTrace.Capture c -> {
                if (x.checkpoint().tensors() == null) {
                    throw bad(where + ".expect.checkpoint.tensors", "missing: a capture stores its tensors");
                }
                rowState(where + ".expect.checkpoint", x.checkpoint());
                fileCheckpoints.add(c.id());
            }
            default -> {
                if (x.rows().size() != x.rowCount()) {
                    throw bad(where + ".expect.rows", x.rows().size() + " entries for " + x.rowCount() + " rows");
                }
                for (int r = 0; r < x.rows().size(); r++) {
                    if (x.rows().get(r) != null) {
                        rowState(where + ".expect.rows[" + r + "]", x.rows().get(r));
                    }
                }
            }
        }
    }

    /** The observables {@code x} carries besides rowCount and error, by field name. */
    private static List<String> present(Expect x) {
        return java.util.stream.Stream.of(x.tokens() != null ? "tokens" : null,
                x.logprobs() != null ? "logprobs" : null, x.top2Gaps() != null ? "top2Gaps" : null,
                x.rows() != null ? "rows" : null, x.checkpoint() != null ? "checkpoint" : null,
                x.experts() != null ? "experts" : null)
                .filter(java.util.Objects::nonNull).toList();
    }

    /** Prefill, draft and commit are the calls that may run MoE forwards (a commit of no accepted token runs none). */
    private static boolean computes(Step s) {
        return s instanceof GoldenTrace.Prefill || s instanceof GoldenTrace.Commit || s instanceof GoldenTrace.Draft;
    }

    /**
     * Router choices (spec §12.5): only on a MoE model; recorded on every successful computing step or on none (an
     * engine that does not report its experts records none); per row of the step, entries
     * {@code [position, e_0, …, e_{K−1}]} with increasing positions and {@code K} distinct experts in {@code [0, E)}.
     */
    private void routerChoices(List<Step> steps, MlpWeights.Moe moe) {
        boolean any = steps.stream().anyMatch(s -> s.expect().experts() != null);
        if (!any) {
            return;
        }
        for (int i = 0; i < steps.size(); i++) {
            Step s = steps.get(i);
            Expect x = s.expect();
            String where = "steps[" + i + "].expect.experts";
            if (x.experts() == null) {
                if (x.error() == null && computes(s)) {
                    throw bad(where, "missing: the trace records router choices, so every successful prefill, "
                            + "draft and commit records them");
                }
                continue;
            }
            if (x.error() != null) {
                continue; // reported by step(): no observable on a refused step
            }
            if (moe == null) {
                throw bad(where, "present, but the model's MTP layer is dense (router choices exist only for MoE, "
                        + "spec §12)");
            }
            if (!computes(s)) {
                continue; // reported by step(): not an observable of this op
            }
            if (x.experts().length != x.rowCount()) {
                throw bad(where, x.experts().length + " entries for " + x.rowCount() + " rows");
            }
            int k = moe.topK();
            int e = moe.numExperts();
            for (int r = 0; r < x.experts().length; r++) {
                int last = -1;
                for (int j = 0; j < x.experts()[r].length; j++) {
                    int[] entry = x.experts()[r][j];
                    String w = where + "[" + r + "][" + j + "]";
                    if (entry.length != 1 + k) {
                        throw bad(w, entry.length + " values, expected the position and K = " + k + " experts");
                    }
                    if (entry[0] <= last) {
                        throw bad(w, "position " + entry[0] + " after position " + last + ", expected increasing");
                    }
                    last = entry[0];
                    for (int a = 1; a <= k; a++) {
                        if (entry[a] >= e) {
                            throw bad(w, "expert " + entry[a] + " outside [0, " + e + ")");
                        }
                        for (int b = 1; b < a; b++) {
                            if (entry[a] == entry[b]) {
                                throw bad(w, "expert " + entry[a] + " chosen twice, expected " + k + " distinct");
                            }
                        }
                    }
                }
            }
        }
    }

    private void tokens(String where, GoldenTrace.Draft d, Expect x) {
        int b = d.pending().length;
        if (x.rowCount() != b || x.tokens().length != b) {
            throw bad(where + ".expect.tokens", x.tokens().length + " rows for a draft of B = " + b + " (pending) and "
                    + "rowCount " + x.rowCount());
        }
        int vocab = golden.trace().model().config().vocabSize();
        for (int r = 0; r < b; r++) {
            if (x.tokens()[r].length != d.depth()) {
                throw bad(where + ".expect.tokens[" + r + "]", x.tokens()[r].length + " positions for depth "
                        + d.depth());
            }
            for (int p = 0; p < d.depth(); p++) {
                if (x.tokens()[r][p] < 0 || x.tokens()[r][p] >= vocab) {
                    throw bad(where + ".expect.tokens[" + r + "][" + p + "]", x.tokens()[r][p] + " outside [0, "
                            + vocab + ")");
                }
            }
        }
    }

    /** A row state: P ≥ 1, draftOffset = P − 1, a digest, and stored tensors (if any) that hash to that digest. */
    private void rowState(String where, RowState st) {
        if (st.processedTokens() < 1 || st.draftOffset() != st.processedTokens() - 1) {
            throw bad(where, "P=" + st.processedTokens() + " draftOffset=" + st.draftOffset() + ", expected P >= 1 "
                    + "and draftOffset = P - 1 (spec §6)");
        }
        if (!SHA256.matcher(st.sha256()).matches()) {
            throw bad(where + ".sha256", UntrustedText.digestPrefix(st.sha256()) + " (" + st.sha256().length()
                    + " chars) is not 64 lowercase hex digits");
        }
        if (st.tensors() == null) {
            return;
        }
        RowCheckpoint stored = stored(st, where);
        String digest = CheckpointDigest.of(stored);
        if (!digest.equals(st.sha256())) {
            throw bad(where + ".sha256", UntrustedText.digestPrefix(st.sha256()) + " is not the digest of the tensors "
                    + "stored under " + UntrustedText.quote(st.tensors()) + ", " + digest);
        }
    }

    /** The checkpoint a row state's stored tensors describe (keys and values only when P > 1). */
    RowCheckpoint stored(RowState st, String where) {
        return stored(golden, st, where);
    }

    static RowCheckpoint stored(Golden golden, RowState st, String where) {
        boolean kv = st.processedTokens() > 1;
        for (String n : kv ? List.of("keys", "values") : List.<String>of()) {
            if (!golden.tensors().containsKey(st.tensors() + "." + n)) {
                throw MtpException.malformedFile("golden " + golden.file() + ": " + where + ".tensors names '"
                        + st.tensors() + "', but " + golden.trace().tensorsFile() + " has no '" + st.tensors() + "."
                        + n + "' (P = " + st.processedTokens() + " > 1 stores keys and values)");
            }
        }
        HostTensor hidden = golden.tensor(st.tensors() + ".hidden", where);
        // sealed here: the golden vouches for these tensors (a row state's sha256 is checked against them before
        // replay) and names the model they belong to
        return RowCheckpoint.sealed(RowCheckpoint.SCHEMA, st.processedTokens(), st.draftOffset(),
                golden.trace().model().identity(), kv ? golden.tensor(st.tensors() + ".keys", where) : null,
                kv ? golden.tensor(st.tensors() + ".values", where) : null, hidden);
    }
}
