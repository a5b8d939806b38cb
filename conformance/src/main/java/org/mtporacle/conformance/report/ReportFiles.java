package org.mtporacle.conformance.report;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseHistogram;
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
import java.util.TreeMap;

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
            // each file whole or not at all: a run stopped mid-write keeps the report it wrote before
            replace(json, JSON.writeValueAsBytes(r));
            replace(dir.resolve("report.html"), HtmlReport.render(r, dir).getBytes(StandardCharsets.UTF_8));
            return json;
        } catch (IOException e) {
            throw new UncheckedIOException("report: cannot write into " + dir, e);
        }
    }

    /**
     * Checks, before any work, that a report can be written into {@code dir}: creates it, and writes and removes a
     * probe file there, so a bad {@code --report} fails at once rather than after the first entry ran.
     *
     * @throws UncheckedIOException naming the folder and what is wrong (the CLI's exit 3)
     */
    public static void checkWritable(Path dir) {
        try {
            if (Files.exists(dir) && !Files.isDirectory(dir)) {
                throw new java.nio.file.FileAlreadyExistsException(dir.toString(), null, "not a directory");
            }
            Files.createDirectories(dir);
            Path probe = Files.createTempFile(dir, ".report-probe", ".tmp");
            Files.delete(probe);
        } catch (IOException e) {
            throw new UncheckedIOException("report: cannot write into " + dir, e);
        }
    }

    private static void replace(Path file, byte[] bytes) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".partial");
        Files.write(tmp, bytes);
        try {
            Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (java.nio.file.AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    public static String toJson(ConformReport r) {
        try {
            return JSON.writeValueAsString(r);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads a {@code report.json}; a missing or malformed file fails naming it and, for bad JSON, where. */
    public static ConformReport read(Path file) {
        String where = "report " + UntrustedText.path(file);
        if (!Files.isRegularFile(file)) {
            throw MtpException.invalidArgument(where + ": no such file");
        }
        JsonNode root = StrictJson.read(file, MAX_BYTES, "report");
        ConformReport r;
        try {
            r = JSON.treeToValue(root, ConformReport.class);
        } catch (com.fasterxml.jackson.databind.JsonMappingException e) {
            String at = String.join("/", e.getPath().stream().map(p -> p.getFieldName() != null ? p.getFieldName()
                    : String.valueOf(p.getIndex())).toList());
            throw MtpException.malformedFile(where + ": not a conform report" + (at.isEmpty() ? "" : " (at /"
                    + UntrustedText.clip(at) + ")"));
        } catch (IOException | IllegalArgumentException e) {
            throw MtpException.malformedFile(where + ": not a conform report (" + UntrustedText.clip(
                    String.valueOf(e.getMessage()).lines().findFirst().orElse("")) + ")");
        }
        if (r == null) {
            throw MtpException.malformedFile(where + ": not a conform report (no 'tool' and 'created')");
        }
        requireComplete(r, where);
        return r;
    }

    /** Every field merge and the renderers use is present: a missing one is MALFORMED_FILE, not a later NPE. */
    private static void requireComplete(ConformReport r, String where) {
        require(r.tool() != null && r.created() != null, where, "not a conform report (no 'tool' and 'created')");
        require(r.contexts() != null, where, "'contexts' is missing");
        for (int i = 0; i < r.entries().size(); i++) {
            ConformReport.Entry e = r.entries().get(i);
            String w = "entry " + i;
            require(e != null && e.backend() != null && e.profile() != null && e.fixture() != null
                    && e.status() != null && e.tolerance() != null && e.stats() != null, where,
                    w + " lacks its backend, profile, fixture, status, tolerance or stats");
            require(e.chainsRun() >= 0 && e.passed() >= 0 && e.passed() <= e.chainsRun(), where,
                    w + " has passed " + e.passed() + " of " + e.chainsRun() + " chains, expected 0 ≤ passed ≤ chainsRun");
            for (int j = 0; j < e.failures().size(); j++) {
                ConformReport.FailureRecord f = e.failures().get(j);
                require(f != null && f.category() != null && f.message() != null && f.actionIndex() >= 0,
                        where, w + " failure " + j + " lacks its category or message, or has actionIndex < 0");
            }
        }
        for (String s : r.shards()) {
            require(s != null, where, "a shard name is null");
        }
        for (String u : r.unfinished()) {
            require(u != null, where, "an unfinished entry is null");
        }
        for (String c : r.pooled()) {
            require(c != null, where, "a pooled campaign's command is null");
        }
    }

    private static void require(boolean ok, String where, String what) {
        if (!ok) {
            throw MtpException.malformedFile(where + ": " + what);
        }
    }

    /**
     * Removes the chain traces an earlier run left in {@code dir}/traces (only {@code chain-*.json}, nothing else),
     * so a report folder never shows another run's failures beside this run's verdict.
     */
    public static void clearTraces(Path dir) {
        Path traces = dir.resolve("traces");
        if (!Files.isDirectory(traces)) {
            return;
        }
        try (var s = Files.newDirectoryStream(traces, "chain-*.json")) {
            for (Path f : s) {
                Files.deleteIfExists(f);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("conform: cannot clear the old traces in " + traces, e);
        }
    }

    /** A shard report and where it was read from (for messages). */
    public record Part(String source, ConformReport report) {
    }

    /** Shard reports merged in order, as if they came from {@code source} "report 1", "report 2", … */
    public static ConformReport merge(List<ConformReport> parts) {
        List<Part> named = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            named.add(new Part("report " + (i + 1), parts.get(i)));
        }
        return merge(named, false);
    }

    /**
     * Merges the shard reports of one campaign: entries with the same profile and fixture add their chains and
     * failures; stats take sums and maxima. Refused (INVALID_ARGUMENT, naming the reports) when the reports come from
     * different campaigns (seed, chains, shard count, chain length, backends or fixtures asked for, contexts, the
     * plan's options but {@code --timeout} and {@code --plugin}), when a
     * shard is given twice, or, unless {@code allowPartial}, when a shard of the campaign is missing; a partial merge
     * lists the missing shards in the report.
     */
    public static ConformReport merge(List<Part> parts, boolean allowPartial) {
        if (parts.isEmpty()) {
            throw MtpException.invalidArgument("merge: no reports given");
        }
        Part first = parts.getFirst();
        ConformReport.Plan plan = first.report().plan();
        Map<String, ConformReport.Entry> merged = new LinkedHashMap<>();
        Map<String, String> shardSource = new TreeMap<>(ReportFiles::compareShards);
        List<String> unfinished = new ArrayList<>();
        for (Part part : parts) {
            ConformReport p = part.report();
            String different = differs(first.report(), p);
            if (different != null) {
                throw MtpException.invalidArgument("merge: " + part.source() + " is from another campaign than "
                        + first.source() + ": " + different);
            }
            List<String> shards = p.shards().isEmpty() ? List.of("1/" + plan.shardCount()) : p.shards();
            for (String s : shards) {
                String before = shardSource.putIfAbsent(s, part.source());
                if (before != null) {
                    throw MtpException.invalidArgument("merge: shard " + s + " appears twice (" + before + " and "
                            + part.source() + ")");
                }
            }
            for (ConformReport.Entry e : p.entries()) {
                merged.merge(e.key(), e, ReportFiles::combine);
            }
            unfinished.addAll(p.unfinished());
        }
        if (!unfinished.isEmpty() && !allowPartial) {
            throw MtpException.invalidArgument("merge: " + unfinished.size() + " entr" + (unfinished.size() == 1
                    ? "y" : "ies") + " had not finished when their shard's run stopped (" + UntrustedText.clip(
                    String.join(", ", unfinished)) + "); rerun those shards, or pass --allow-partial");
        }
        List<String> missing = new ArrayList<>();
        for (int k = 1; k <= plan.shardCount(); k++) {
            if (!shardSource.containsKey(k + "/" + plan.shardCount())) {
                missing.add(k + "/" + plan.shardCount());
            }
        }
        if (!missing.isEmpty() && !allowPartial) {
            throw MtpException.invalidArgument("merge: the campaign (seed " + first.report().seed() + ", "
                    + first.report().chains() + " chains, " + plan.shardCount() + " shards) is incomplete: shard"
                    + (missing.size() == 1 ? " " : "s ") + String.join(", ", missing) + " missing (merge them too, "
                    + "or pass --allow-partial)");
        }
        ConformReport r = first.report();
        return new ConformReport(r.tool(), r.created(), r.seed(), r.chains(), new ArrayList<>(shardSource.keySet()),
                r.contexts(), new ArrayList<>(merged.values()), plan, missing, unfinished);
    }

    /**
     * Pools reports of different campaigns (other seeds or chain counts) for calibration: entries with the same
     * profile and fixture add their chains, failures, stats and distributions, as shards do. Refused
     * (INVALID_ARGUMENT) when the reports' contexts differ (a target run and a drafter run do not pool). The result
     * keeps the first report's seed and plan, with {@code chains} the sum of the reports', and lists in
     * {@code pooled} the command that runs each pooled campaign again (a pool's own list, for a pool pooled again):
     * no single {@code mtp conform} runs a pool.
     */
    public static ConformReport pool(List<Part> parts) {
        if (parts.isEmpty()) {
            throw MtpException.invalidArgument("merge: no reports given");
        }
        ConformReport first = parts.getFirst().report();
        Map<String, ConformReport.Entry> merged = new LinkedHashMap<>();
        long chains = 0;
        java.util.LinkedHashSet<String> pooled = new java.util.LinkedHashSet<>();
        for (Part part : parts) {
            ConformReport p = part.report();
            if (p.pooled().isEmpty()) {
                pooled.add(TextReport.reproduce(p));
            } else {
                pooled.addAll(p.pooled());
            }
            if (!p.contexts().equals(first.contexts())) {
                throw MtpException.invalidArgument("merge --pool: " + part.source() + " has other contexts than "
                        + parts.getFirst().source() + ": " + UntrustedText.quote(p.contexts()) + " vs "
                        + UntrustedText.quote(first.contexts()));
            }
            chains += p.chains();
            for (ConformReport.Entry e : p.entries()) {
                merged.merge(e.key(), e, ReportFiles::combine);
            }
        }
        return new ConformReport(first.tool(), first.created(), first.seed(), (int) Math.min(Integer.MAX_VALUE,
                chains), first.shards(), first.contexts(), new ArrayList<>(merged.values()), first.plan(), List.of(),
                List.of(), new ArrayList<>(pooled));
    }

    /**
     * A plan's options that define the campaign: all but {@code --timeout} and {@code --plugin} and their values, which
     * shards run on different machines may well set differently.
     */
    private static List<String> campaignOptions(ConformReport.Plan p) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < p.options().size(); i++) {
            String o = p.options().get(i);
            if (o.equals("--timeout") || o.equals("--plugin")) {
                i++;
            } else {
                out.add(o);
            }
        }
        return out;
    }

    /** What makes {@code b} another campaign than {@code a}, or null. */
    private static String differs(ConformReport a, ConformReport b) {
        ConformReport.Plan x = a.plan();
        ConformReport.Plan y = b.plan();
        if (a.seed() != b.seed()) {
            return "seed " + b.seed() + " vs " + a.seed();
        }
        if (a.chains() != b.chains()) {
            return "chains " + b.chains() + " vs " + a.chains();
        }
        if (x.shardCount() != y.shardCount() || y.shardCount() < 1) {
            return "shard count " + y.shardCount() + " vs " + x.shardCount();
        }
        if (x.maxActions() != y.maxActions()) {
            return "max actions " + y.maxActions() + " vs " + x.maxActions();
        }
        if (!x.backends().equals(y.backends())) {
            return "backends " + y.backends() + " vs " + x.backends();
        }
        if (!x.fixtures().equals(y.fixtures())) {
            return "fixtures " + y.fixtures() + " vs " + x.fixtures();
        }
        if (!campaignOptions(x).equals(campaignOptions(y))) {
            return "options " + campaignOptions(y) + " vs " + campaignOptions(x);
        }
        if (!a.contexts().equals(b.contexts())) {
            return "contexts " + UntrustedText.quote(b.contexts()) + " vs " + UntrustedText.quote(a.contexts());
        }
        return null;
    }

    private static int compareShards(String a, String b) {
        int c = Integer.compare(a.length(), b.length());
        return c != 0 ? c : a.compareTo(b);
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

    /** The sum of two entries' NMSE distributions, kind by kind; a kind of other bins in either is dropped. */
    private static Map<String, ConformReport.NmseData> sum(Map<String, ConformReport.NmseData> a,
                                                           Map<String, ConformReport.NmseData> b) {
        Map<String, ConformReport.NmseData> out = new LinkedHashMap<>();
        for (String k : a.keySet()) {
            NmseHistogram x = a.get(k).histogram();
            ConformReport.NmseData other = b.get(k);
            if (other == null) {
                out.put(k, a.get(k));
                continue;
            }
            NmseHistogram y = other.histogram();
            if (x != null && y != null) {
                x.addAll(y);
                out.put(k, ConformReport.NmseData.of(x));
            }
        }
        b.forEach((k, v) -> {
            if (!a.containsKey(k)) {
                out.put(k, v);
            }
        });
        return out;
    }

    private static List<Long> addBins(List<Long> a, List<Long> b) {
        if (a.isEmpty() || b.isEmpty() || a.size() != b.size()) {
            return List.of(); // a report without the bins: the merged distribution is unknown
        }
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            out.add(a.get(i) + b.get(i));
        }
        return out;
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
                x.badCalls() + y.badCalls(), Math.max(x.maxNearTieGap(), y.maxNearTieGap()),
                addBins(x.nearTieGaps(), y.nearTieGaps()), sum(x.gaps(), y.gaps()), x.router().plus(y.router()),
                sum(x.nmse(), y.nmse()));
        ConformReport.Status st = f.isEmpty() ? ConformReport.Status.PASSED : ConformReport.Status.FAILED;
        return new ConformReport.Entry(a.backend(), a.profile(), a.options(), a.fixture(), a.fixtureRecipe(),
                a.modelIdentity(), a.tolerance(), a.numerics(), st, a.reason(), a.chainsRun() + b.chainsRun(),
                a.passed() + b.passed(), a.seconds() + b.seconds(), s, f);
    }
}
