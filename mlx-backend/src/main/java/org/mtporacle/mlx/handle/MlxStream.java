package org.mtporacle.mlx.handle;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** One {@code mlx_stream} on the CPU or GPU, created and freed on the MLX thread exactly once. */
public final class MlxStream implements AutoCloseable {
    private final MlxLibrary lib;
    private final MemorySegment handle;
    private final boolean gpu;
    private boolean freed;

    private MlxStream(MlxLibrary lib, MemorySegment handle, boolean gpu) {
        this.lib = lib;
        this.handle = handle;
        this.gpu = gpu;
    }

    /** The MLX thread's default stream of the CPU or GPU. */
    public static MlxStream open(MlxLibrary lib, boolean gpu) {
        return lib.thread().call(() -> {
            MemorySegment s = gpu ? lib.c().mlx_default_gpu_stream_new(Arena.ofAuto())
                    : lib.c().mlx_default_cpu_stream_new(Arena.ofAuto());
            return new MlxStream(lib, s, gpu);
        });
    }

    MemorySegment handle() {
        if (freed) {
            throw new IllegalStateException("mlx: use of a freed stream");
        }
        return handle;
    }

    public boolean isGpu() {
        return gpu;
    }

    public MlxLibrary library() {
        return lib;
    }

    @Override
    public void close() {
        if (!freed) {
            freed = true;
            lib.thread().run(() -> lib.check("mlx_stream_free", lib.c().mlx_stream_free(handle)));
        }
    }
}
