package org.mtporacle.tools;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.io.CompanionConverter;
import org.mtporacle.io.ModelLoader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/** {@code mtp convert}: a raw Hugging Face Qwen3.5 checkpoint → a companion directory, optionally MLX-quantized. */
@Command(name = "convert", mixinStandardHelpOptions = true,
        description = {"Convert a raw Hugging Face Qwen3.5 checkpoint (one file or shards) into a companion directory: "
                + "mtp. prefix stripped, norms folded once in f32, target head in target_head.safetensors, config.json "
                + "with model_type qwen3_5_mtp; optionally MLX affine quantization.",
                "The result is loaded back and its identity printed; a non-HF input exits 3 with one line. A "
                        + "non-empty --out is refused unless --force."})
final class ConvertCommand implements Callable<Integer> {
    @Option(names = "--from", paramLabel = "HF_DIR", required = true, description = "The raw HF checkpoint directory.")
    Path from;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "The companion directory (created).")
    Path out;

    @Option(names = "--keep", paramLabel = "MODULE",
            description = "Leave this module dense when quantizing (repeatable), e.g. lm_head or layers.0.mlp.down_proj.")
    List<String> keep = new ArrayList<>();

    @Option(names = "--force", description = "Write into --out even when it is not empty (files of the same name are "
            + "replaced).")
    boolean force;

    @Option(names = "--allow-suspicious-norms", description = "Convert even when the input's norms look folded already "
            + "(the companion would bake in gains of about 2, spec §11.4); without it such an input is refused.")
    boolean allowSuspiciousNorms;

    @Mixin
    Mixins.Quantize quantize;

    @Mixin
    Mixins.Quiet quiet;

    @Override
    public Integer call() {
        int group = quantize.group();
        if (!java.nio.file.Files.exists(from)) {
            throw MtpException.invalidArgument("--from " + from + ": no such directory");
        }
        if (!force && nonEmpty(out)) {
            throw MtpException.invalidArgument("convert: " + out + " is not empty (give --force to write into it)");
        }
        if (!allowSuspiciousNorms) {
            MtpModel input = ModelLoader.load(from);
            for (String w : input.warnings()) {
                if (w.startsWith(org.mtporacle.io.NormFolding.WARNING_PREFIX)) {
                    throw MtpException.incompatibleModel("convert: " + w + "; refusing to bake it into a companion "
                            + "(give --allow-suspicious-norms to convert it as it is)");
                }
            }
        }
        ProgressLine progress = quiet.progress();
        CompanionConverter.Result r = CompanionConverter.convert(from, out,
                new CompanionConverter.Options(quantize.bits, group, new HashSet<>(keep)),
                (name, done, total) -> progress.update("converting", done, total, name));
        progress.finish();
        MtpModel m = ModelLoader.load(out);
        System.out.println("wrote companion " + r.out() + " (" + r.tensors() + " tensors)");
        r.modules().forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
        System.out.println("identity: " + m.identity());
        m.warnings().forEach(w -> System.out.println("warning: " + w));
        return MtpCommand.EXIT_OK;
    }

    private static boolean nonEmpty(Path dir) {
        if (!Files.exists(dir)) {
            return false;
        }
        if (!Files.isDirectory(dir)) {
            return true;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isPresent();
        } catch (IOException e) {
            throw new UncheckedIOException("convert: cannot list " + dir, e);
        }
    }
}
