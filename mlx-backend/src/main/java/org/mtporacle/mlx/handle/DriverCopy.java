package org.mtporacle.mlx.handle;

import org.mtporacle.mlx.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

/**
 * The host read's copy through the CUDA driver ({@link MlxOps.HostCopy#DRIVER}). MLX's CUDA build hands out a GPU
 * array's data as managed memory it has just filled on the device; read by the CPU, its pages migrate one fault at a
 * time (about 5 GB/s with eight threads on an H200 host), while {@code cuMemcpy} moves them with the copy engine.
 * Runs on the MLX thread, right after {@code mlx_array_data_float32}, where MLX's own copy has made the device's
 * context current. Once the driver is missing or a copy fails, every later read takes the threads' copy: the status
 * says which and why.
 */
final class DriverCopy {
    private static final Optional<CudaDriver> DRIVER = CudaDriver.loaded();
    private static volatile String failed = DRIVER.isPresent() ? null
            : "no CUDA driver (libcuda.so.1) in this process";
    private static volatile long copies;

    private DriverCopy() {
    }

    /** Copies {@code src} into {@code parts} (their sizes add up to its); false, having copied nothing, where it cannot. */
    static boolean copy(MemorySegment src, MemorySegment[] parts) {
        if (failed != null) {
            return false;
        }
        CudaDriver d = DRIVER.orElseThrow();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ctx = a.allocate(ValueLayout.ADDRESS);
            int status = d.cuCtxGetCurrent(ctx);
            if (status != CudaDriver.SUCCESS || ctx.get(ValueLayout.ADDRESS, 0).equals(MemorySegment.NULL)) {
                failed = "cuCtxGetCurrent: " + (status != CudaDriver.SUCCESS ? "CUresult " + status
                        : "no context current on the MLX thread");
                return false;
            }
        }
        long off = 0;
        for (MemorySegment part : parts) {
            if (part.byteSize() > 0) {
                int status = d.cuMemcpy(part, src.asSlice(off, part.byteSize()), part.byteSize());
                if (status != CudaDriver.SUCCESS) {
                    failed = "cuMemcpy: CUresult " + status;
                    return false; // the caller copies everything again, the threads' way
                }
            }
            off += part.byteSize();
        }
        copies++;
        return true;
    }

    /** Whether the driver copy ran in this process, or why it does not. */
    static String status() {
        String f = failed;
        return f != null ? "threads (" + f + ")" : copies > 0 ? "cuMemcpy (" + copies + " reads)"
                : "cuMemcpy available, not used yet";
    }
}
