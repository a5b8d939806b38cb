package org.mtporacle.conformance.report;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.compare.GapHistogram;

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
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

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
        try {
            ConformReport r = JSON.readValue(file.toFile(), ConformReport.class);
            if (r.entries() == null) {
                throw MtpException.malformedFile("report " + file + ": no entries");
            }
            return r;
        } catch (IOException e) {
            throw MtpException.malformedFile("report " + file + ": not a conform report (" + e.getMessage()
                    .lines().findFirst().orElse("") + ")");
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

    /** The sum of two entries' gap counts; when either is missing or of other bins, the one that is not. */
    private static ConformReport.GapData sum(ConformReport.GapData a, ConformReport.GapData b) {
        GapHistogram x = a == null ? null : a.histogram();
        GapHistogram y = b == null ? null : b.histogram();
        if (x == null || y == null) {
            return x == null ? b : a;
        }
        x.addAll(y);
        return ConformReport.GapData.of(x);
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
                x.badCalls() + y.badCalls(), Math.max(x.maxNearTieGap(), y.maxNearTieGap()), sum(x.gaps(), y.gaps()));
        ConformReport.Status st = f.isEmpty() ? ConformReport.Status.PASSED : ConformReport.Status.FAILED;
        return new ConformReport.Entry(a.backend(), a.profile(), a.options(), a.fixture(), a.fixtureRecipe(),
                a.modelIdentity(), a.tolerance(), a.numerics(), st, a.reason(), a.chainsRun() + b.chainsRun(),
                a.passed() + b.passed(), a.seconds() + b.seconds(), s, f);
    }
}
