package org.mtporacle.io.fuzz;

import org.mtporacle.api.DType;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.io.CheckpointFiles;
import org.mtporacle.io.SafetensorsWriter;
import org.mtporacle.io.ShardedTensorStore;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.kernels.KernelMode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.nio.file.StandardCopyOption.REPLACE_EXISTING;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Writes the seed corpus of {@link ParserFuzzTest}: valid files made by the project's own writers (SafetensorsWriter,
 * FixtureModels, CheckpointFiles) plus a few hand-written configs in the layouts of spec §1.3. Seeds are named
 * {@code seed-*}. Beside them: {@code corpus-*}, small inputs of new coverage kept from fuzzing runs, and
 * {@code crash-*}, every input that ever violated {@link FuzzProperty} (committed with its fix).
 */
public final class FuzzSeeds {
    private FuzzSeeds() {
    }

    /** Writes every target's seeds under {@code inputsRoot/<target>/}. */
    public static void write(Path inputsRoot) throws IOException {
        Path tmp = Files.createTempDirectory("mtp-fuzz-seeds-");
        try {
            safetensors(inputsRoot.resolve("safetensors"), tmp);
            configs(inputsRoot.resolve("config"), tmp);
            modelDirectories(inputsRoot.resolve("modelDirectory"), tmp);
            checkpoints(inputsRoot.resolve("checkpoint"), tmp);
        } finally {
            ParserFuzzTest.deleteTree(tmp);
        }
    }

    private static void safetensors(Path out, Path tmp) throws IOException {
        Files.createDirectories(out);
        float[] v = {0f, -1.5f, 2.25f, 3e-3f, 1e4f, -7f};
        List<DType> types = List.of(DType.F32, DType.F16, DType.BF16, DType.F64, DType.I64, DType.I32, DType.U32,
                DType.I16, DType.U16, DType.I8, DType.U8, DType.BOOL);
        SafetensorsWriter all = new SafetensorsWriter().metadata("format", "pt").metadata("note", "every dtype");
        for (DType t : types) {
            byte[] raw = new byte[6 * (int) t.byteSize()];
            for (int b = 0; b < raw.length; b++) {
                raw[b] = (byte) (b * 37 + t.ordinal());
            }
            all.add("t_" + t.safetensorsName(), t.isFloating() ? HostTensor.ofFloats(v, 2, 3).convert(t)
                    : HostTensor.copyOf(t, new int[] {2, 3}, java.lang.foreign.MemorySegment.ofArray(raw)));
        }
        all.add("scalar", HostTensor.ofFloats(new float[] {4f}));
        all.add("empty", HostTensor.ofFloats(new float[0], 0, 3));
        all.write(out.resolve("seed-dtypes.safetensors"));
        new SafetensorsWriter().write(out.resolve("seed-empty.safetensors"));
        new SafetensorsWriter().metadata("a", "b").add("x", HostTensor.ofFloats(v, 1, 1, 6))
                .write(out.resolve("seed-one.safetensors"));
        Path model = FixtureModels.write(FuzzModels.MICRO, 11, tmp.resolve("st"), FixtureModels.Layout.HF,
                DType.BF16, 0, 0);
        Files.copy(model.resolve("model.safetensors"), out.resolve("seed-micro-model.safetensors"),
                REPLACE_EXISTING);
        Path q = FixtureModels.write(FuzzModels.MICRO, 12, tmp.resolve("stq"), FixtureModels.Layout.COMPANION,
                DType.F16, 4, 32);
        Files.copy(q.resolve("model.safetensors"), out.resolve("seed-micro-q4.safetensors"),
                REPLACE_EXISTING);
    }

    private static void configs(Path out, Path tmp) throws IOException {
        Files.createDirectories(out);
        int i = 0;
        for (FixtureModels.Layout layout : FixtureModels.Layout.values()) {
            for (int bits : new int[] {0, 4}) {
                Path d = FixtureModels.write(FuzzModels.MICRO, 1, tmp.resolve("c" + i), layout, DType.BF16, bits, 32);
                Files.copy(d.resolve("config.json"), out.resolve("seed-" + layout.name().toLowerCase() + "-q" + bits
                        + ".json"), REPLACE_EXISTING);
                i++;
            }
        }
        Files.writeString(out.resolve("seed-qwen3-next-flat.json"), """
                {"model_type": "qwen3_next", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "head_dim": 8, "partial_rotary_factor": 0.25, "rope_theta": 10000000, "rms_norm_eps": 1e-6,
                 "vocab_size": 32, "intermediate_size": 32, "tie_word_embeddings": false,
                 "quantization_config": {"group_size": 32, "bits": 4, "mode": "affine",
                   "mtp.fc": false, "fc": false, "lm_head": {"bits": 8}}}
                """, StandardCharsets.UTF_8);
        Files.writeString(out.resolve("seed-defaults.json"), """
                {"model_type": "qwen3_5_mtp", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2}
                """, StandardCharsets.UTF_8);
    }

    private static void modelDirectories(Path out, Path tmp) throws IOException {
        Files.createDirectories(out);
        record Variant(String name, FixtureModels.Layout layout, DType dtype, int bits, boolean indexed) {
        }
        for (Variant v : List.of(new Variant("hf-bf16", FixtureModels.Layout.HF, DType.BF16, 0, false),
                new Variant("hf-f32-indexed", FixtureModels.Layout.HF, DType.F32, 0, true),
                new Variant("companion-q4", FixtureModels.Layout.COMPANION, DType.BF16, 4, false),
                new Variant("companion-f16-indexed", FixtureModels.Layout.COMPANION, DType.F16, 0, true))) {
            Path d = FixtureModels.write(FuzzModels.MICRO, 21, tmp.resolve("m-" + v.name()), v.layout(), v.dtype(),
                    v.bits(), 32);
            Path head = d.resolve(ShardedTensorStore.TARGET_HEAD_FILE);
            byte[] index = new byte[0];
            if (v.indexed()) {
                StringBuilder json = new StringBuilder("{\"metadata\": {\"total_size\": 1}, \"weight_map\": {");
                try (var st = org.mtporacle.io.SafetensorsFile.open(d.resolve("model.safetensors"))) {
                    json.append(String.join(", ", st.names().stream()
                            .map(n -> "\"" + n + "\": \"model.safetensors\"").toList()));
                }
                index = json.append("}}").toString().getBytes(StandardCharsets.UTF_8);
            }
            byte[] joined = ParserFuzzTest.joinModelDir(Files.readAllBytes(d.resolve("config.json")),
                    Files.readAllBytes(d.resolve("model.safetensors")),
                    Files.isRegularFile(head) ? Files.readAllBytes(head) : new byte[0], index);
            Files.write(out.resolve("seed-" + v.name()), joined);
        }
    }

    private static void checkpoints(Path out, Path tmp) throws IOException {
        Files.createDirectories(out);
        MtpModel m = FuzzModels.inMemory();
        int h = m.config().hiddenSize();
        List<RowCheckpoint> cps = new ArrayList<>();
        try (ReferenceDraftModel d = ReferenceBackend.load(m, KernelMode.SCALAR, 1);
             DraftRows g = d.openRows(Arrays.asList(null, null))) {
            g.prefill(HostTensor.ofInts(new int[] {1, 2}, 2, 1), HostTensor.ofFloats(ramp(2 * h), 2, 1, h));
            cps.add(g.capture(0)); // P = 1, no keys
            g.draft(new int[] {3, 4}, 2, new long[2], DraftSampling.greedy(2));
            g.commit(new int[] {2, 1}, HostTensor.ofFloats(ramp(2 * 3 * h), 2, 3, h));
            cps.add(g.capture(0));
            cps.add(g.capture(1));
        }
        RowCheckpoint c = cps.get(1);
        cps.add(RowCheckpoint.sealed(c.schema(), c.processedTokens(), c.draftOffset(), c.modelIdentity(),
                c.keys().convert(DType.BF16), c.values().convert(DType.BF16), c.hidden().convert(DType.F16)));
        for (int i = 0; i < cps.size(); i++) {
            CheckpointFiles.write(cps.get(i), out.resolve("seed-" + i + "-p" + cps.get(i).processedTokens()));
        }
    }

    private static float[] ramp(int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) Math.cos(i * 0.21);
        }
        return out;
    }
}
