package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * One {@code mlx_array} handle, freed exactly once: by its {@link MlxScope} or, after {@link MlxScope#release}, by
 * its new owner's {@link #close()}. The raw handle stays package-private.
 */
public final class MlxArray implements AutoCloseable {
    private final MlxLibrary lib;
    private final MemorySegment handle; // the mlx_array struct { void* ctx; }
    private boolean freed;
    private int[] shape;
    MlxScope owner;

    MlxArray(MlxLibrary lib, MemorySegment handle) {
        this.lib = lib;
        this.handle = handle;
    }

    /** A fresh empty handle, ready to receive an op result ({@code mlx_array_new}). */
    static MlxArray empty(MlxLibrary lib) {
        MemorySegment seg = lib.c().mlx_array_new(Arena.ofAuto());
        return new MlxArray(lib, seg);
    }

    /** The raw handle, checked live: a freed handle passed to native code would crash the JVM. */
    MemorySegment handle() {
        if (freed) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "mlx: use of a freed array");
        }
        return handle;
    }

    MlxLibrary library() {
        return lib;
    }

    /** True once freed. */
    public boolean isFreed() {
        return freed;
    }

    /** The array's shape (known without evaluation). */
    public int[] shape() {
        if (shape == null) {
            MlxC c = lib.c();
            int n = (int) c.mlx_array_ndim(handle());
            shape = n == 0 ? new int[0]
                    : c.mlx_array_shape(handle()).reinterpret(4L * n).toArray(ValueLayout.JAVA_INT);
        }
        return shape.clone();
    }

    public int rank() {
        return shape().length;
    }

    public int dim(int axis) {
        int[] s = shape();
        return s[axis < 0 ? s.length + axis : axis];
    }

    /** The element strides, one per dimension (those of the evaluated data; row-major before evaluation). */
    long[] strides() {
        MlxC c = lib.c();
        int n = (int) c.mlx_array_ndim(handle());
        return n == 0 ? new long[0] : c.mlx_array_strides(handle()).reinterpret(8L * n).toArray(ValueLayout.JAVA_LONG);
    }

    /** The {@code mlx_dtype} code. */
    public int dtype() {
        return lib.c().mlx_array_dtype(handle());
    }

    /** Frees the handle unless already freed; detaches it from its scope. */
    @Override
    public void close() {
        if (freed) {
            return;
        }
        freed = true;
        if (owner != null) {
            owner.forget(this);
            owner = null;
        }
        lib.thread().run(() -> {
            long t0 = NativeTimes.start();
            lib.check("mlx_array_free", lib.c().mlx_array_free(handle));
            NativeTimes.end("mlx_array_free", t0);
        });
    }

    @Override
    public String toString() {
        return freed ? "MlxArray[freed]" : "MlxArray" + Arrays.toString(shape());
    }
}
