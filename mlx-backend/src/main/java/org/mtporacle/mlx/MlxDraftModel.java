package org.mtporacle.mlx;

import org.mtporacle.api.DType;
import org.mtporacle.api.DeviceProbe;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/** A model loaded into MLX: the block's weights and the target head on one device stream, in one compute dtype. */
public final class MlxDraftModel implements DraftModel, DeviceProbe {
    /** What the block computes in. */
    public enum Precision {
        /** The weights' own float dtype (bf16 for the fixtures and published companions), as the seed does. */
        NATIVE,
        /** Everything upcast to f32. */
        F32
    }

    private final MtpModel model;
    private final MlxLibrary lib;
    private final MlxStream stream;
    private final Precision precision;
    private final int dtype;
    private final DType checkpointDType;
    private final MlxBlock block;
    private volatile boolean closed;

    /** {@code moe}: the MoE layer's path ({@code moe} option; null: its default); ignored for a dense model. */
    MlxDraftModel(MtpModel model, MlxLibrary lib, boolean gpu, Precision precision, MlxMoe.Path moe) {
        this(model, lib, gpu, precision, moe, false);
    }

    /** {@code compile}: one-position forwards through {@code mlx_compile} ({@link MlxBlock}). */
    MlxDraftModel(MtpModel model, MlxLibrary lib, boolean gpu, Precision precision, MlxMoe.Path moe, boolean compile) {
        this.model = model;
        this.lib = lib;
        this.precision = precision;
        this.checkpointDType = precision == Precision.F32 ? DType.F32 : weightsDType(model.weights().fc());
        this.dtype = switch (checkpointDType) {
            case BF16 -> MlxC.MLX_BFLOAT16;
            case F16 -> MlxC.MLX_FLOAT16;
            default -> MlxC.MLX_FLOAT32;
        };
        this.stream = MlxStream.open(lib, gpu);
        try {
            MlxSelfCheck.verify(lib, stream);
            this.block = lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    // CPU quantized products accumulate in f32 (see MlxLinear.upload)
                    return new MlxBlock(new MlxOps(stream, scope), model.config(), model.weights(), dtype, !gpu,
                            moe, compile);
                }
            });
        } catch (RuntimeException e) {
            stream.close();
            throw e;
        }
    }

    private static DType weightsDType(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> d.weight().dtype();
            case LinearWeight.Affine a -> a.scales().dtype();
        };
    }

    @Override
    public MtpModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "mlx " + (stream.isGpu() ? "gpu" : "cpu") + " " + checkpointDType.name().toLowerCase()
                + " (precision=" + precision.name().toLowerCase() + ", MLX " + lib.version()
                + "; " + (stream.isGpu() ? "" : "quantized products accumulate in f32; ")
                + "greedy and seeded drafts sampled on device, one host read per round"
                + (block.compiled() ? "; compile=on: one-position forwards through mlx_compile" : "")
                + (block.moe() == null ? "" : block.moe().path() == MlxMoe.Path.GATHER
                ? "; MoE moe=gather: top-k on device, experts by gather_mm/gather_qmm, router choices read once per "
                + "call" : "; MoE moe=per-expert: router probabilities read once per forward, top-k on the host")
                + ")";
    }

    public Precision precision() {
        return precision;
    }

    /** The library this model runs on (for tests: active memory). */
    public MlxLibrary library() {
        return lib;
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the model is closed");
        }
        MlxDraftRows rows = new MlxDraftRows(this);
        try {
            rows.append(checkpoints);
        } catch (RuntimeException e) {
            rows.close();
            throw e;
        }
        return rows;
    }

    int dtype() {
        return dtype;
    }

    DType checkpointDType() {
        return checkpointDType;
    }

    int vocabSize() {
        return model.config().vocabSize();
    }

    MlxBlock block() {
        return block;
    }

    /** Runs {@code work} on the MLX thread with a fresh scope and this model's stream. */
    void run(Consumer<MlxOps> work) {
        call(ops -> {
            work.accept(ops);
            return null;
        });
    }

    /** {@link #run} for work with a result. */
    <T> T call(Function<MlxOps, T> work) {
        if (closed) {
            throw MtpException.illegalState("mlx: the model is closed");
        }
        return lib.thread().call(() -> {
            try (MlxScope scope = new MlxScope(lib)) {
                return work.apply(new MlxOps(stream, scope));
            }
        });
    }

    /** True once {@link #close()} ran; the model's groups then refuse every call (spec §11.11). */
    boolean isClosed() {
        return closed;
    }

    /** {@code t} on the device in the compute dtype. */
    MlxArray upload(MlxOps ops, HostTensor t) {
        MlxArray a = ops.fromHost(t);
        return a.dtype() == dtype ? a : ops.astype(a, dtype);
    }

    @Override
    public String device() {
        return "mlx " + (stream.isGpu() ? "gpu" : "cpu");
    }

    /** Times {@code −x} over a {@code bytes}-byte f32 array on this model's stream ({@code mlx_eval} waits for it). */
    @Override
    public double copyBytesPerSecond(long bytes, int rounds) {
        if (bytes < (1 << 20) || rounds < 1 || bytes / 4 > Integer.MAX_VALUE) {
            throw MtpException.invalidArgument("bandwidth: bytes = " + bytes + ", rounds = " + rounds
                    + "; expected 1 MiB ≤ bytes ≤ 8 GiB and rounds ≥ 1");
        }
        int n = (int) (bytes / 4);
        double[] seconds = new double[rounds + 2];
        run(ops -> {
            MlxArray x = ops.add(ops.zeros(MlxC.MLX_FLOAT32, n), ops.fromFloats(new float[] {1f}, 1));
            ops.eval(x);
            for (int r = 0; r < seconds.length; r++) {
                try (MlxScope round = new MlxScope(lib)) {
                    MlxOps in = new MlxOps(stream, round);
                    long start = System.nanoTime();
                    in.eval(in.negative(x));
                    seconds[r] = (System.nanoTime() - start) / 1e9;
                }
            }
        });
        double[] timed = java.util.Arrays.copyOfRange(seconds, 2, seconds.length); // two warm-ups
        java.util.Arrays.sort(timed);
        return 2.0 * n * 4 / timed[timed.length / 2];
    }

    /** A chain of 256 dependent {@code x + 1} on 64 f32 values, evaluated once; the median per-op time of the chains. */
    @Override
    public double operationSeconds(int rounds) {
        if (rounds < 1) {
            throw MtpException.invalidArgument("operation cost: rounds = " + rounds + ", expected ≥ 1");
        }
        int chain = 256;
        double[] seconds = new double[rounds + 2];
        run(ops -> {
            MlxArray one = ops.fromFloats(new float[] {1f}, 1);
            MlxArray x0 = ops.add(ops.zeros(MlxC.MLX_FLOAT32, 64), one);
            ops.eval(x0);
            for (int r = 0; r < seconds.length; r++) {
                try (MlxScope round = new MlxScope(lib)) {
                    MlxOps in = new MlxOps(stream, round);
                    long start = System.nanoTime();
                    MlxArray x = x0;
                    for (int i = 0; i < chain; i++) {
                        x = in.add(x, one);
                    }
                    in.eval(x);
                    seconds[r] = (System.nanoTime() - start) / 1e9 / chain;
                }
            }
        });
        double[] timed = java.util.Arrays.copyOfRange(seconds, 2, seconds.length);
        java.util.Arrays.sort(timed);
        return timed[timed.length / 2];
    }

    @Override
    public long operations() {
        return lib.operations();
    }

    @Override
    public long evaluationNanos() {
        return lib.evalNanos();
    }

    @Override
    public long workerNanos() {
        return lib.thread().busyNanos();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            lib.thread().run(block::close);
            stream.close();
        }
    }
}
