package org.mtporacle.tools;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mtp spec}: speculative decoding on a release checkpoint in the reference (spec §13.4): the hybrid target and
 * the MTP drafter of one Hugging Face directory, a prompt of token ids, and the run's declared choices; prints the
 * tokens, the acceptance counters under vLLM's and llama.cpp's conventions, and whether the speculative output equals
 * plain decoding (exit 1 when it does not).
 */
@Command(name = "spec", mixinStandardHelpOptions = true,
        description = {"Run speculative decoding in the reference on a release checkpoint (its hybrid target and its "
                + "MTP head, one Hugging Face directory) and check it against plain decoding: prints the tokens, the "
                + "acceptance histogram and counters, and whether speculative == plain (exit 1 when not).",
            "Prompts are token ids (no tokenizer)."})
final class SpecCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @Spec
    CommandSpec spec;

    @Option(names = "--model", paramLabel = "DIR", required = true,
            description = "A release directory: model.language_model.* (the target), mtp.* (the drafter), "
                    + "config.json.")
    Path model;

    @ArgGroup(exclusive = true)
    Prompt prompt = new Prompt();

    static final class Prompt {
        @Option(names = "--prompt", paramLabel = "IDS", split = ",",
                description = "Prompt token ids, comma-separated (e.g. 13,6,77).")
        int[] ids;

        @Option(names = "--random-prompt", paramLabel = "N", defaultValue = "8",
                description = "A seeded random prompt of N ids instead (default: ${DEFAULT-VALUE}).")
        int random = 8;
    }

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "32",
            description = "Tokens to generate (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--depth", paramLabel = "D", defaultValue = "3",
            description = "Draft tokens per round, 0 to 64 (default: ${DEFAULT-VALUE}; 0: every round verifies the "
                    + "pending token alone).")
    int depth;

    @Option(names = "--tap", paramLabel = "pre|post", defaultValue = "post",
            description = "The target hidden that feeds the drafter: before or after the final norm (default: "
                    + "${DEFAULT-VALUE}).")
    String tap;

    @Option(names = "--kv", paramLabel = "keep|rebuild", defaultValue = "keep",
            description = "The drafter's KV after a verify: keep the drafted rows, or rebuild them from the "
                    + "verify's taps (default: ${DEFAULT-VALUE}).")
    String kv;

    @Option(names = "--temperature", paramLabel = "T", defaultValue = "0",
            description = "Sampling temperature; 0 is greedy (default: ${DEFAULT-VALUE}).")
    double temperature;

    @Option(names = "--top-k", paramLabel = "K", defaultValue = "0", description = "Top-k (0: off).")
    int topK;

    @Option(names = "--top-p", paramLabel = "P", defaultValue = "1", description = "Top-p (1: off).")
    double topP;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1",
            description = "Seed of the sampling stream and the random prompt (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--prefill", paramLabel = "recurrent|chunked", defaultValue = "recurrent",
            description = "The GDN form of the prompt's prefill (default: ${DEFAULT-VALUE}); verifies are always "
                    + "recurrent.")
    String prefill;

    @Option(names = "--threads", paramLabel = "N", defaultValue = "1",
            description = "Reference kernel threads (results are the same for any count; default: "
                    + "${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--save-state", paramLabel = "FILE",
            description = "Write the target row's state after the run (a target checkpoint file, "
                    + "mtp-oracle-target-checkpoint/1) to FILE, for comparing an engine's state; `mtp inspect FILE` "
                    + "reads it.")
    Path saveState;

    @Option(names = "--force", description = "Overwrite --save-state's FILE if it exists.")
    boolean force;

    @Mixin
    Mixins.Json json;

    @Override
    public Integer call() throws Exception {
        Mixins.Usage.require(spec, tokens >= 1 && tokens <= 1 << 16, "--tokens " + tokens + ": expected 1 to 65536");
        Mixins.Usage.require(spec, depth >= 0 && depth <= 64, "--depth " + depth + ": expected 0 to 64");
        Mixins.Usage.require(spec, threads >= 1 && threads <= 1024, "--threads " + threads + ": expected 1 to 1024");
        Mixins.Usage.require(spec, prompt.ids != null || (prompt.random >= 1 && prompt.random <= 1 << 16),
                "--random-prompt " + prompt.random + ": expected 1 to 65536");
        HiddenTap hiddenTap = Mixins.Usage.lookup(spec, () -> HiddenTap.of(tap));
        SpeculativeDecoding.KvPolicy policy = Mixins.Usage.lookup(spec, () -> SpeculativeDecoding.KvPolicy.of(kv));
        ReferenceTarget.PrefillForm form = switch (prefill) {
            case "recurrent" -> ReferenceTarget.PrefillForm.RECURRENT;
            case "chunked" -> ReferenceTarget.PrefillForm.CHUNKED;
            default -> throw Mixins.Usage.error(spec, "--prefill '" + prefill + "': expected recurrent or chunked");
        };
        RowSampler sampler = Mixins.Usage.lookup(spec, () -> temperature == 0 ? RowSampler.GREEDY
                : RowSampler.of(temperature, topK, topP, seed));

        if (saveState != null && java.nio.file.Files.exists(saveState) && !force) {
            throw org.mtporacle.api.MtpException.invalidArgument("spec: " + saveState
                    + " already exists (give --force to overwrite it)");
        }
        TargetModel target = TargetLoader.load(model);
        MtpModel drafter = ModelLoader.load(model);
        int vocab = target.config().shape().vocabSize();
        int[] ids = prompt.ids != null ? prompt.ids : randomPrompt(prompt.random, vocab, seed);
        Mixins.Usage.require(spec, ids.length >= 1, "--prompt: at least one token id");
        for (int i = 0; i < ids.length; i++) {
            Mixins.Usage.require(spec, ids[i] >= 0 && ids[i] < vocab, "--prompt: token " + ids[i] + " at index " + i
                    + " is outside [0, " + vocab + "), the model's vocabulary");
        }
        SpeculativeDecoding.Request request = new SpeculativeDecoding.Request(ids, sampler, tokens, 0);
        SpeculativeDecoding.Result result;
        int[] plain;
        String numerics;
        try (ReferenceTarget t = new ReferenceTarget(target, new Kernels(KernelMode.VECTOR, threads), form);
             ReferenceDraftModel m = new ReferenceDraftModel(drafter, new Kernels(KernelMode.VECTOR, threads))) {
            numerics = t.numerics();
            org.mtporacle.api.TargetCheckpoint[] last = new org.mtporacle.api.TargetCheckpoint[1];
            result = new SpeculativeDecoding(t, m, SpeculativeDecoding.Options.of(hiddenTap, policy, depth))
                    .run(List.of(request), saveState == null ? null : (round, requests, tr, dr) -> last[0] =
                            tr.capture(0));
            if (saveState != null && last[0] != null) {
                org.mtporacle.io.TargetCheckpointFiles.write(last[0], saveState);
            }
            plain = SpeculativeDecoding.plain(t, request);
        }
        int[] out = result.outputs().getFirst();
        boolean same = Arrays.equals(out, plain);
        int firstDiff = 0;
        while (firstDiff < out.length && out[firstDiff] == plain[firstDiff]) {
            firstDiff++;
        }
        Map<String, Object> report = report(target, ids, sampler, hiddenTap, policy, numerics, out, plain, same,
                result);
        if (json.json) {
            System.out.println(JSON.writeValueAsString(report));
        } else {
            print(target, ids, sampler, hiddenTap, policy, numerics, out, plain, same, firstDiff, result);
            if (saveState != null) {
                System.out.println("target state after the run: " + saveState + (result.counters().rounds() == 0
                        ? " (not written: no round ran, --tokens 1)" : ""));
            }
        }
        return same ? MtpCommand.EXIT_OK : MtpCommand.EXIT_FAILED;
    }

    private static int[] randomPrompt(int n, int vocab, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = rnd.nextInt(vocab);
        }
        return ids;
    }

    private void print(TargetModel target, int[] ids, RowSampler sampler, HiddenTap hiddenTap,
                       SpeculativeDecoding.KvPolicy policy, String numerics, int[] out, int[] plain, boolean same,
                       int firstDiff, SpeculativeDecoding.Result result) {
        TargetConfig c = target.config();
        System.out.printf("model: %s (%s, %d layers: %d GDN + %d full attention, H %d, V %d)%n", model,
                target.layout(), c.layerCount(), c.count(TargetConfig.LayerType.LINEAR_ATTENTION),
                c.count(TargetConfig.LayerType.FULL_ATTENTION), c.shape().hiddenSize(), c.shape().vocabSize());
        System.out.printf("run: depth %d, tap %s, drafter KV %s, %s, reference %s%n", depth, hiddenTap.label(),
                policy.label(), sampler, numerics);
        System.out.printf("prompt (%d): %s%n", ids.length, join(ids));
        System.out.printf("speculative (%d): %s%n", out.length, join(out));
        System.out.printf("plain       (%d): %s%n", plain.length, join(plain));
        System.out.println(same ? "speculative == plain: yes, all " + out.length + " tokens"
                : "speculative == plain: NO, they differ first at token " + firstDiff + " (speculative " + out[firstDiff]
                + ", plain " + plain[firstDiff] + ")");
        SpeculativeDecoding.Counters k = result.counters();
        long[] histogram = histogram(result.accepted().getFirst());
        System.out.printf("rounds %d, drafts %d, draft tokens %d, accepted %d%n", k.rounds(), k.drafts(),
                k.draftTokens(), k.accepted());
        StringBuilder h = new StringBuilder("accepted drafts per round:");
        for (int a = 0; a < histogram.length; a++) {
            h.append(a == 0 ? " " : " | ").append(a).append(": ").append(histogram[a]);
        }
        System.out.println(h);
        if (k.drafts() > 0) {
            System.out.printf("mean acceptance length (vLLM, 1 + accepted/drafts): %.3f%n", k.meanAcceptanceLength());
            System.out.printf("per-position acceptance (vLLM, over drafts): %s%n", Arrays.stream(
                    k.acceptedPerPosition()).mapToObj(n -> String.format("%.3f", (double) n / k.drafts()))
                    .collect(Collectors.joining(", ")));
            System.out.printf("draft acceptance rate (llama.cpp, accepted/drafted): %.3f%n",
                    (double) k.accepted() / k.draftTokens());
        }
    }

    private Map<String, Object> report(TargetModel target, int[] ids, RowSampler sampler, HiddenTap hiddenTap,
                                       SpeculativeDecoding.KvPolicy policy, String numerics, int[] out, int[] plain,
                                       boolean same, SpeculativeDecoding.Result result) {
        SpeculativeDecoding.Counters k = result.counters();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("model", model.toString());
        r.put("layout", target.layout());
        r.put("layerTypes", target.config().layers().stream().map(TargetConfig.LayerType::configName).toList());
        r.put("depth", depth);
        r.put("tap", hiddenTap.label());
        r.put("kvPolicy", policy.label());
        r.put("sampler", sampler.toString());
        r.put("numerics", numerics);
        r.put("prompt", ids);
        r.put("speculative", out);
        r.put("plain", plain);
        r.put("speculativeEqualsPlain", same);
        r.put("acceptedPerRound", result.accepted().getFirst());
        Map<String, Object> counters = new LinkedHashMap<>();
        counters.put("rounds", k.rounds());
        counters.put("drafts", k.drafts());
        counters.put("draftTokens", k.draftTokens());
        counters.put("accepted", k.accepted());
        counters.put("acceptedPerPosition", k.acceptedPerPosition());
        counters.put("meanAcceptanceLength", k.meanAcceptanceLength());
        r.put("counters", counters);
        return r;
    }

    private static long[] histogram(int[] accepted) {
        int max = Arrays.stream(accepted).max().orElse(0);
        long[] h = new long[max + 1];
        for (int a : accepted) {
            h[a]++;
        }
        return h;
    }

    private static String join(int[] ids) {
        return Arrays.stream(ids).mapToObj(Integer::toString).collect(Collectors.joining(" "));
    }
}
