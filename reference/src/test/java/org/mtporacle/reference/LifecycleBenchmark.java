package org.mtporacle.reference;

import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.block.BlockForward;
import org.mtporacle.reference.block.ForwardTrace;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
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

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * JMH: the row group's own cost per draft round (draft of depth 1, then commit with one accepted), over a block that
 * only appends its KV rows, so checks, bookkeeping, copies and the head's log-probs are what is timed. Run with
 * {@code org.mtporacle.reference.kernels.JmhMain LifecycleBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class LifecycleBenchmark {
    @Param({"1", "8"})
    public int rows;

    private Kernels kernels;
    private ReferenceDraftRows group;
    private int[] pending;
    private long[] steps;
    private DraftSampling sampling;
    private int[] accepted;
    private HostTensor verify;

    /** Appends K = E and V = Hin; Y = Hin. */
    static final class AppendOnlyBlock implements BlockForward {
        private final int width;

        AppendOnlyBlock(MtpModel m) {
            width = m.config().numKvHeads() * m.config().headDim();
        }

        @Override
        public float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace) {
            int h = e.length / (kvs.length * s);
            for (int b = 0; b < kvs.length; b++) {
                RowKv kv = kvs[b];
                kv.reserve(s);
                for (int t = 0; t < s; t++) {
                    kv.put(0, kv.length() + t, e, (b * s + t) * h, hin, (b * s + t) * h);
                }
                kv.setLength(kv.length() + s);
            }
            return hin.clone();
        }
    }

    /** A fresh group per iteration: each round keeps one position, so the caches stay small. */
    @Setup(Level.Iteration)
    public void setup() {
        MtpModel model = TestModels.random(TestModels.tinyConfig(), 5, DType.F32);
        int h = model.config().hiddenSize();
        kernels = new Kernels(KernelMode.VECTOR, 1);
        ReferenceDraftModel dm = new ReferenceDraftModel(model, kernels, new AppendOnlyBlock(model));
        group = dm.openReferenceRows(Arrays.asList(new org.mtporacle.api.RowCheckpoint[rows]));
        SplittableRandom rnd = new SplittableRandom(3);
        group.prefill(TestModels.tokens(rnd, rows, 4, model.config().vocabSize()), TestModels.hiddens(rnd, rows, 4, h));
        pending = new int[rows];
        steps = new long[rows];
        sampling = DraftSampling.greedy(rows);
        accepted = new int[rows];
        verify = TestModels.hiddens(rnd, rows, 2, h);
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        kernels.close();
    }

    /** One round: draft one token per row, commit none of them (each row keeps its pending row). */
    @Benchmark
    public int draftAndCommit() {
        int[][] d = group.draft(pending, 1, steps, sampling);
        group.commit(accepted, verify);
        return d[0][0];
    }
}
