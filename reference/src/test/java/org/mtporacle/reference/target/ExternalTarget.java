package org.mtporacle.reference.target;

import java.nio.file.Path;

import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.TargetLoader;

/**
 * The external float64 reference of a whole tiny Qwen3.5 hybrid target with its MTP head, computed with transformers'
 * own {@code Qwen3_5TextModel} ({@code src/test/data/qwen35-target-transformers}, its README states every
 * convention): one release directory per weight variant feeds the target and the drafter.
 */
record ExternalTarget(TargetModel target, MtpModel drafter, SafetensorsFile expected) {
    static final Path DATA = Path.of("src/test/data/qwen35-target-transformers");
    static final String[] VARIANTS = {"float32", "bfloat16"};

    static ExternalTarget load(String variant) {
        Path dir = DATA.resolve(variant);
        return new ExternalTarget(TargetLoader.load(dir), ModelLoader.load(dir),
                SafetensorsFile.open(dir.resolve("inputs-and-expected.safetensors")));
    }

    double[] d(String name) {
        return expected.tensor(name).toDoubleArray();
    }

    int[] ints(String name) {
        return expected.tensor(name).toIntArray();
    }

    boolean has(String name) {
        return expected.contains(name);
    }

    /** NMSE {@code Σ(a−b)²/Σb²} of {@code got} against {@code want}, over {@code want.length} elements. */
    static double nmse(float[] got, int gotOff, double[] want, int wantOff, int n) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < n; i++) {
            double e = got[gotOff + i] - want[wantOff + i];
            num += e * e;
            den += want[wantOff + i] * want[wantOff + i];
        }
        return den == 0 ? num : num / den;
    }

    static double nmse(float[] got, double[] want) {
        if (got.length != want.length) {
            throw new AssertionError("lengths differ: " + got.length + " vs " + want.length);
        }
        return nmse(got, 0, want, 0, want.length);
    }
}
