package org.mtporacle.tools;

import org.mtporacle.api.MtpModel;
import org.mtporacle.io.CompanionConverter;
import org.mtporacle.io.ModelLoader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code mtp convert}: a raw Hugging Face Qwen3.5 checkpoint → a companion directory, optionally MLX-quantized. */
@Command(name = "convert", mixinStandardHelpOptions = true,
        description = {"Convert a raw Hugging Face Qwen3.5 checkpoint (one file or shards) into a companion directory: "
                + "mtp. prefix stripped, norms folded once in f32, target head in target_head.safetensors, config.json "
                + "with model_type qwen3_5_mtp; optionally MLX affine quantization.",
                "The result is loaded back and its identity printed; a non-HF input exits 3 with one line."})
final class ConvertCommand implements Callable<Integer> {
    @Option(names = "--from", paramLabel = "HF_DIR", required = true, description = "The raw HF checkpoint directory.")
    Path from;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "The companion directory (created).")
    Path out;

    @Option(names = "--quantize", paramLabel = "BITS", defaultValue = "0",
            description = "MLX affine bits: 2, 3, 4, 5, 6 or 8 (default: dense).")
    int bits;

    @Option(names = "--group-size", paramLabel = "G", defaultValue = "64",
            description = "Quantization group size: 32, 64 or 128 (default: ${DEFAULT-VALUE}).")
    int groupSize;

    @Option(names = "--keep", paramLabel = "MODULE",
            description = "Leave this module dense when quantizing (repeatable), e.g. lm_head or layers.0.mlp.down_proj.")
    List<String> keep = new ArrayList<>();

    @Option(names = "--quiet", description = "No progress bar.")
    boolean quiet;

    @Override
    public Integer call() {
        ProgressLine progress = new ProgressLine(quiet);
        CompanionConverter.Result r = CompanionConverter.convert(from, out,
                new CompanionConverter.Options(bits, bits == 0 ? 0 : groupSize, new HashSet<>(keep)),
                (name, done, total) -> progress.update("converting", done, total, name));
        progress.finish();
        MtpModel m = ModelLoader.load(out);
        System.out.println("wrote companion " + r.out() + " (" + r.tensors() + " tensors)");
        r.modules().forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
        System.out.println("identity: " + m.identity());
        m.warnings().forEach(w -> System.out.println("warning: " + w));
        return MtpCommand.EXIT_OK;
    }
}
