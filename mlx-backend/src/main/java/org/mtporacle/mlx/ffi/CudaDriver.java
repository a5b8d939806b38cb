package org.mtporacle.mlx.ffi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Raw downcalls into the CUDA driver API ({@code libcuda.so.1}, which MLX's CUDA build links and has loaded): the two
 * functions a host read uses to copy an evaluated array out of MLX's memory with the GPU's copy engine. Both have had
 * these signatures since CUDA 4 ({@code CUdeviceptr} is a 64-bit integer, passed as an address here so that a Java
 * array can be the destination). No logic and no validation here: the caller passes only a pointer and a size MLX
 * handed out and a destination of at least that size.
 */
public final class CudaDriver {
    /** {@code CUDA_SUCCESS}. */
    public static final int SUCCESS = 0;

    private final MethodHandle cuCtxGetCurrent;
    private final MethodHandle cuMemcpy;

    private CudaDriver(SymbolLookup lookup) {
        Linker linker = Linker.nativeLinker();
        cuCtxGetCurrent = linker.downcallHandle(find(lookup, "cuCtxGetCurrent"),
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        // a heap destination (the caller's Java array) is passed as is: the call neither calls back into Java nor
        // blocks on anything but the copy, which holds the garbage collector off for its few milliseconds
        cuMemcpy = linker.downcallHandle(find(lookup, "cuMemcpy"),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), Linker.Option.critical(true));
    }

    /** The driver this process has loaded, or empty where there is none (no NVIDIA driver, or a CPU-only MLX). */
    public static Optional<CudaDriver> loaded() {
        try {
            return Optional.of(new CudaDriver(SymbolLookup.libraryLookup("libcuda.so.1", Arena.global())));
        } catch (IllegalArgumentException | java.util.NoSuchElementException | UnsatisfiedLinkError e) {
            return Optional.empty();
        }
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new java.util.NoSuchElementException("symbol " + name));
    }

    /** {@code CUresult cuCtxGetCurrent(CUcontext* pctx)}: {@code pctx} receives the calling thread's context. */
    public int cuCtxGetCurrent(MemorySegment pctx) {
        try {
            return (int) cuCtxGetCurrent.invokeExact(pctx);
        } catch (Throwable t) {
            throw new IllegalStateException("cuCtxGetCurrent", t);
        }
    }

    /**
     * {@code CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)}: the transfer's kind inferred
     * from the pointers (unified addressing); synchronous for a pageable host destination.
     */
    public int cuMemcpy(MemorySegment dst, MemorySegment src, long bytes) {
        try {
            return (int) cuMemcpy.invokeExact(dst, src, bytes);
        } catch (Throwable t) {
            throw new IllegalStateException("cuMemcpy", t);
        }
    }
}
