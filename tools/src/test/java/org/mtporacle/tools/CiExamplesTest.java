package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The scheduler examples under examples/ci and the README's shard example run, locally, exactly the shard and merge
 * commands they name: every shard
 * index the file schedules but the last, then the merge, which must fail naming the missing shard; then the last
 * shard, and the merge passes with every chain of the campaign.
 */
class CiExamplesTest {
    private static final Pattern COMMAND = Pattern.compile("(?:\\./|/\\S+/)mtp (conform[^\"\\n&;]*)");

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "examples/ci/github-actions.yml, '\\$\\{\\{ matrix\\.shard }}', 'shard: \\[([0-9, ]+)]'",
            "examples/ci/kubernetes-indexed-job.yaml, '\\$\\(\\(JOB_COMPLETION_INDEX\\+1\\)\\)', 'completions: ([0-9]+)'",
            "examples/ci/slurm-array.sh, '\\$\\{SLURM_ARRAY_TASK_ID}', '--array=([0-9]+-[0-9]+)'",
            "README.md, '\\$k', 'for k in ([0-9 ]+);'"})
    void theFileRunsItsShardsAndItsMergeFailsOnAMissingShard(String file, String indexVar, String indicesRegex)
            throws Exception {
        Path repo = Path.of(System.getProperty("mtp.repo.root", ".."));
        String text = Files.readString(repo.resolve(file));
        if (file.equals("README.md")) { // its "Shards" section
            text = text.substring(text.indexOf("### Shards"));
            text = text.substring(0, text.indexOf("\n## "));
        }
        List<String> commands = COMMAND.matcher(text).results().map(m -> m.group(1).strip()).toList();
        List<String> shard = commands.stream().filter(c -> !c.startsWith("conform merge")).toList();
        List<String> merge = commands.stream().filter(c -> c.startsWith("conform merge")).toList();
        assertThat(shard).as("one shard command in " + file).hasSize(1);
        assertThat(merge).as("one merge command in " + file).hasSize(1);

        Matcher countMatch = Pattern.compile("--shard 1/([0-9]+)")
                .matcher(shard.getFirst().replaceAll(indexVar, "1"));
        assertThat(countMatch.find()).as("the shard command names --shard K/N with K the index").isTrue();
        int n = Integer.parseInt(countMatch.group(1));
        assertThat(indices(text, indicesRegex)).as("the file schedules every shard 1..%d", n)
                .containsExactlyElementsOf(IntStream.rangeClosed(1, n).boxed().toList());

        for (int k = 1; k < n; k++) {
            Cli r = run(shard.getFirst().replaceAll(indexVar, Integer.toString(k)));
            assertThat(r.exit()).as(r.out()).isZero();
        }
        Cli incomplete = run(merge.getFirst());
        assertThat(incomplete.exit()).as(incomplete.out()).isEqualTo(3);
        assertThat(incomplete.out()).contains("shard " + n + "/" + n + " missing");

        Cli last = run(shard.getFirst().replaceAll(indexVar, Integer.toString(n)));
        assertThat(last.exit()).as(last.out()).isZero();
        Cli complete = run(merge.getFirst());
        assertThat(complete.exit()).as(complete.out()).isZero();
        Matcher chains = Pattern.compile("--chains ([0-9]+)").matcher(shard.getFirst());
        assertThat(chains.find()).isTrue();
        Path merged = work.resolve(arg(merge.getFirst(), "--report")).resolve("report.json");
        JsonNode json = new ObjectMapper().readTree(merged.toFile());
        assertThat(json.at("/entries/0/chainsRun").asLong()).isEqualTo(Long.parseLong(chains.group(1)));
        assertThat(json.get("shards")).hasSize(n);
    }

    /** 1-based shard indices the file schedules: a matrix list, a completion count (0-based + 1), an array range. */
    private static List<Integer> indices(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertThat(m.find()).as("the file says which shards it schedules (" + regex + ")").isTrue();
        String g = m.group(1);
        if (g.contains(",") || g.strip().contains(" ")) {
            return Stream.of(g.strip().split("[, ]+")).map(Integer::valueOf).toList();
        }
        if (g.contains("-")) {
            String[] r = g.split("-");
            return IntStream.rangeClosed(Integer.parseInt(r[0]), Integer.parseInt(r[1])).boxed().toList();
        }
        return IntStream.rangeClosed(1, Integer.parseInt(g)).boxed().toList();
    }

    private static String arg(String command, String option) {
        List<String> words = List.of(command.split("\\s+"));
        return words.get(words.indexOf(option) + 1);
    }

    /** Runs "conform …" in process as a shell in {@link #work} would: relative paths and globs resolved there. */
    private Cli run(String command) throws Exception {
        List<String> args = new ArrayList<>();
        String previous = "";
        for (String w : command.split("\\s+")) {
            if (w.contains("*")) {
                PathMatcher glob = FileSystems.getDefault().getPathMatcher("glob:" + w);
                try (Stream<Path> s = Files.walk(work)) {
                    s.map(work::relativize).filter(glob::matches).sorted().forEach(p -> args.add(work.resolve(p)
                            .toString()));
                }
            } else if (previous.equals("--report") || (w.contains("/") && !w.startsWith("-")
                    && !previous.equals("--shard"))) {
                args.add(work.resolve(w).toString());
            } else {
                args.add(w);
            }
            previous = w;
        }
        return Cli.run(args.toArray(String[]::new));
    }
}
