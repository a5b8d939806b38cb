package org.mtporacle.conformance.report;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.io.StrictJson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/** Writes a report as {@code report.json} and {@code report.html}; reads and merges shard reports. */
public final class ReportFiles {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
    /** A larger report.json is refused before it is read. */
    public static final long MAX_BYTES = 64L * 1024 * 1024;

    private ReportFiles() {
    }

    /** Writes {@code report.json} and {@code report.html} into {@code dir}; returns the JSON file. */
    public static Path write(ConformReport r, Path dir) {
        try {
            Files.createDirectories(dir);
            Path json = dir.resolve("report.json");
            JSON.writeValue(json.toFile(), r);
            Files.writeString(dir.resolve("report.html"), HtmlReport.render(r), StandardCharsets.UTF_8);
            return json;
        } catch (IOException e) {
            throw new UncheckedIOException("report: cannot write into " + dir, e);
        }
    }

    public static String toJson(ConformReport r) {
        try {
            return JSON.writeValueAsString(r);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads a {@code report.json}; a malformed file fails with MALFORMED_FILE naming it. */
    public static ConformReport read(Path file) {
        String where = "report " + UntrustedText.path(file);
        JsonNode root = StrictJson.read(file, MAX_BYTES, "report");
        ConformReport r;
        try {
            r = JSON.treeToValue(root, ConformReport.class);
        } catch (IOException | IllegalArgumentException e) {
            String m = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage()
                    : e.getMessage();
            throw MtpException.malformedFile(where + ": not a conform report (" + UntrustedText.clip(
                    String.valueOf(m).lines().findFirst().orElse("")) + ")");
        }
        requireComplete(r, where);
        return r;
    }

    /** Every field merge and the renderers use is present: a missing one is MALFORMED_FILE, not a later NPE. */
    private static void requireComplete(ConformReport r, String where) {
        require(r.tool() != null && r.created() != null && r.contexts() != null, where, "tool, created or contexts");
        for (int i = 0; i < r.entries().size(); i++) {
            ConformReport.Entry e = r.entries().get(i);
            String w = "entries[" + i + "]";
            require(e != null, where, w);
            require(e.backend() != null && e.profile() != null && e.fixture() != null && e.status() != null
                    && e.tolerance() != null, where, w + " backend, profile, fixture, status or tolerance");
            require(e.stats() != null, where, w + ".stats");
            require(e.chainsRun() >= 0 && e.passed() >= 0 && e.passed() <= e.chainsRun(), where,
                    w + " chainsRun ≥ passed ≥ 0");
            for (int j = 0; j < e.failures().size(); j++) {
                ConformReport.FailureRecord f = e.failures().get(j);
                require(f != null && f.category() != null && f.message() != null && f.actionIndex() >= 0,
                        where, w + ".failures[" + j + "] category, message or actionIndex ≥ 0");
            }
        }
        for (String s : r.shards()) {
            require(s != null, where, "shards");
        }
    }

    private static void require(boolean ok, String where, String what) {
        if (!ok) {
            throw MtpException.malformedFile(where + ": " + what + " missing or out of range");
        }
    }

    /**
     * Merges shard reports of one campaign: entries with the same profile and fixture add their chains and
     * failures; stats take sums and maxima. Reports of different seeds or chain counts are refused.
     */
    public static ConformReport merge(List<ConformReport> parts) {
        if (parts.isEmpty()) {
            throw MtpException.invalidArgument("merge: no reports given");
        }
        ConformReport first = parts.getFirst();
        Map<String, ConformReport.Entry> merged = new LinkedHashMap<>();
        TreeSet<String> shards = new TreeSet<>();
        for (ConformReport p : parts) {
            if (p.seed() != first.seed() || p.chains() != first.chains()) {
                throw MtpException.invalidArgument("merge: reports come from different campaigns (seed " + p.seed()
                        + " chains " + p.chains() + " vs seed " + first.seed() + " chains " + first.chains() + ")");
            }
            for (String s : p.shards()) {
                if (!shards.add(s)) {
                    throw MtpException.invalidArgument("merge: shard " + s + " appears twice");
                }
            }
            for (ConformReport.Entry e : p.entries()) {
                merged.merge(e.key(), e, ReportFiles::combine);
            }
        }
        return new ConformReport(first.tool(), first.created(), first.seed(), first.chains(),
                new ArrayList<>(shards), first.contexts(), new ArrayList<>(merged.values()));
    }

    private static ConformReport.Entry combine(ConformReport.Entry a, ConformReport.Entry b) {
        if (a.status() == ConformReport.Status.UNAVAILABLE) {
            return b;
        }
        if (b.status() == ConformReport.Status.UNAVAILABLE) {
            return a;
        }
        List<ConformReport.FailureRecord> f = new ArrayList<>(a.failures());
        f.addAll(b.failures());
        ConformReport.Stats x = a.stats();
        ConformReport.Stats y = b.stats();
        ConformReport.Stats s = new ConformReport.Stats(x.comparedTokens() + y.comparedTokens(),
                x.nearTies() + y.nearTies(), x.comparedCheckpoints() + y.comparedCheckpoints(),
                Math.max(x.maxKvNmse(), y.maxKvNmse()), Math.max(x.maxHiddenNmse(), y.maxHiddenNmse()),
                x.badCalls() + y.badCalls(), Math.max(x.maxNearTieGap(), y.maxNearTieGap()));
        ConformReport.Status st = f.isEmpty() ? ConformReport.Status.PASSED : ConformReport.Status.FAILED;
        return new ConformReport.Entry(a.backend(), a.profile(), a.options(), a.fixture(), a.fixtureRecipe(),
                a.modelIdentity(), a.tolerance(), a.numerics(), st, a.reason(), a.chainsRun() + b.chainsRun(),
                a.passed() + b.passed(), a.seconds() + b.seconds(), s, f);
    }
}
