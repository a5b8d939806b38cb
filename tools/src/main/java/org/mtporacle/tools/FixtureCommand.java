package org.mtporacle.tools;

import org.mtporacle.api.DType;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code mtp fixture}: writes a deterministic random-weight model in the real naming and layout: an MTP head with its
 * target's head, or a hybrid target with its MTP head ({@code *-target} presets, spec §13).
 */
@Command(name = "fixture", mixinStandardHelpOptions = true,
        description = "Write a deterministic random-weight model (config.json + safetensors) in the real layout.")
final class FixtureCommand implements Callable<Integer> {
    @Option(names = "--preset", paramLabel = "NAME",
            description = "An MTP preset (tiny, small, qwen3.5-0.8b, …) or a hybrid-target preset (tiny-target, "
                    + "small-target, tiny-moe-target); see --list.")
    String preset;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1", description = "Weight seed (default: 1).")
    long seed;

    @Option(names = "--out", paramLabel = "DIR", description = "Output directory (created).")
    Path out;

    @Option(names = "--layout", paramLabel = "hf|companion", defaultValue = "hf",
            description = "Raw Hugging Face layout (mtp. prefix, zero-centred norms) or companion (default: hf).")
    String layout;

    @Option(names = "--dtype", paramLabel = "bf16|f16|f32", defaultValue = "bf16",
            description = "Weight dtype (default: bf16).")
    String dtype;

    @Mixin
    Mixins.Quantize quantize;

    @Option(names = "--list", description = "List the presets and the named fixture recipes, then exit.")
    boolean list;

    @Mixin
    Mixins.Quiet quiet;

    @Spec
    CommandSpec spec;

    /**
     * The help's footer: every preset and fixture recipe by name (the --preset description names only a few), wrapped
     * here at spaces: picocli would also break inside a name at its dots ({@code qwen3.5-0.} / {@code 8b-target}).
     */
    static String[] footer() {
        List<String> lines = new ArrayList<>();
        wrap(lines, "MTP presets:", FixtureModels.PRESETS.stream().map(FixtureModels.Preset::name).toList());
        wrap(lines, "Hybrid-target presets:", TargetFixtures.PRESETS.stream().map(TargetFixtures.Preset::name)
                .toList());
        wrap(lines, "Fixture recipes (--fixture of conform, tck, golden):", java.util.stream.Stream.concat(
                FixtureRecipe.BUNDLED.stream(), FixtureRecipe.EXTRA.stream()).map(FixtureRecipe::name).toList());
        lines.add("`mtp fixture --list` shows their shapes.");
        return lines.toArray(String[]::new);
    }

    private static void wrap(List<String> lines, String heading, List<String> names) {
        StringBuilder line = new StringBuilder(heading);
        for (int i = 0; i < names.size(); i++) {
            String word = names.get(i) + (i == names.size() - 1 ? "." : ",");
            if (line.length() + 1 + word.length() > 78) {
                lines.add(line.toString());
                line = new StringBuilder("  ").append(word);
            } else {
                line.append(' ').append(word);
            }
        }
        lines.add(line.toString());
    }

    @Override
    public Integer call() throws Exception {
        if (list) {
            System.out.println("presets:");
            for (FixtureModels.Preset p : FixtureModels.PRESETS) {
                System.out.printf("  %-20s hidden %d, heads %d/%d, head_dim %d, intermediate %d, vocab %d, %s%s%n",
                        p.name(), p.hiddenSize(), p.numHeads(), p.numKvHeads(), p.headDim(), p.intermediateSize(),
                        p.vocabSize(), p.tied() ? "tied" : "untied", p.gainSpread() == FixtureModels.Preset.GAIN_SPREAD
                                ? "" : ", norm gains 1 + N(0, " + p.gainSpread() + "²)");
            }
            System.out.println("hybrid-target presets (target + MTP head in one release directory, Qwen3.5 unless "
                    + "said, hf layout, dense, any dtype):");
            for (TargetFixtures.Preset p : TargetFixtures.PRESETS) {
                System.out.printf("  %-26s %s%n", p.name(), TargetFixtures.describe(p));
            }
            System.out.println("fixture recipes (bundled ones run by `mtp conform`):");
            FixtureRecipe.BUNDLED.forEach(r -> System.out.println("  * " + r.describe()));
            FixtureRecipe.EXTRA.forEach(r -> System.out.println("    " + r.describe()));
            return MtpCommand.EXIT_OK;
        }
        Mixins.Usage.require(spec, preset != null && out != null, "--preset and --out are required (or --list)");
        boolean target = TargetFixtures.isPreset(preset);
        Mixins.Usage.require(spec, target || FixtureModels.PRESETS.stream().anyMatch(p -> p.name().equals(preset)),
                "--preset " + preset + ": expected one of " + String.join(", ", java.util.stream.Stream.concat(
                        FixtureModels.PRESETS.stream().map(FixtureModels.Preset::name),
                        TargetFixtures.PRESETS.stream().map(TargetFixtures.Preset::name)).toList()));
        FixtureModels.Layout l = switch (layout.toLowerCase(Locale.ROOT)) {
            case "hf" -> FixtureModels.Layout.HF;
            case "companion" -> FixtureModels.Layout.COMPANION;
            default -> throw Mixins.Usage.error(spec, "--layout " + layout + ": expected hf or companion");
        };
        DType t = switch (dtype.toLowerCase(Locale.ROOT)) {
            case "bf16" -> DType.BF16;
            case "f16" -> DType.F16;
            case "f32" -> DType.F32;
            default -> throw Mixins.Usage.error(spec, "--dtype " + dtype + ": expected bf16, f16 or f32");
        };
        int bits = quantize.bits;
        int groupSize = quantize.group();
        if (target) {
            Mixins.Usage.require(spec, l == FixtureModels.Layout.HF, "--layout " + layout + ": a target preset is "
                    + "written in the release (hf) layout only");
            Mixins.Usage.require(spec, bits == 0, "--quantize " + bits + ": a target preset is written dense only");
            Mixins.Usage.require(spec, TargetFixtures.parameterCount(TargetFixtures.preset(preset))
                    <= TargetFixtures.MAX_WRITE_PARAMETERS, "--preset " + preset + ": a real shape, too big to write "
                    + "(build it in memory with TargetFixtures.syntheticLayer / syntheticHead)");
        }
        long start = System.nanoTime();
        Path dir;
        try (AutoCloseable ticker = quiet.progress().ticker("writing " + preset + " (" + l.name()
                .toLowerCase() + ", " + t + (bits == 0 ? "" : ", " + bits + "-bit group " + groupSize) + ") to "
                + out)) {
            dir = target ? TargetFixtures.write(preset, seed, out, t)
                    : FixtureModels.write(preset, seed, out, l, t, bits, groupSize);
        }
        System.out.printf("wrote %s in %.1f s%n", dir, (System.nanoTime() - start) / 1e9);
        return MtpCommand.EXIT_OK;
    }
}
