package org.mtporacle.reference.kernels;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.mtporacle.api.DType;
import org.mtporacle.api.LinearWeight;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/** JMH: mat-vec and small-batch matmul per weight format and mode, at H = 1024 (run with {@link JmhMain}). */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class KernelsBenchmark {
    @Param({"BF16", "F16", "F32", "affine/4/64", "affine/8/64", "affine/3/64"})
    public String format;

    @Param({"VECTOR"})
    public String mode;

    @Param({"1", "8"})
    public int rows;

    private LinearWeight w;
    private float[] x;
    private float[] out;
    private Kernels kernels;

    @Setup(Level.Trial)
    public void setUp() {
        SplittableRandom rnd = new SplittableRandom(1);
        int outF = 3584;
        int in = 1024;
        // Off-heap, as weights from a mapped file are: the vector kernels read heap segments through a slow path.
        w = Kernels.offHeap(switch (format) {
            case "BF16" -> TestWeights.dense(DType.BF16, outF, in, rnd).weight();
            case "F16" -> TestWeights.dense(DType.F16, outF, in, rnd).weight();
            case "F32" -> TestWeights.dense(DType.F32, outF, in, rnd).weight();
            default -> {
                String[] p = format.split("/");
                yield TestWeights.affine(Integer.parseInt(p[1]), Integer.parseInt(p[2]), outF, in, rnd).weight();
            }
        });
        x = TestWeights.randomFloats(rows * in, rnd);
        out = new float[rows * outF];
        kernels = new Kernels(KernelMode.valueOf(mode), 1);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        kernels.close();
    }

    @Benchmark
    public float[] matmul() {
        kernels.matmul(out, 0, w, x, 0, rows);
        return out;
    }
}
