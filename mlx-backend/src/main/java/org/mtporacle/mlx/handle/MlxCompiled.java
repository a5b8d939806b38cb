package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.List;

/**
 * A graph-building function made into an {@code mlx_closure} and compiled with {@code mlx_compile} (not shapeless):
 * MLX traces it once per distinct set of input shapes and dtypes, simplifies the traced graph and fuses its
 * elementwise chains, and later calls only replay the traced graph. The function may capture evaluated arrays (the
 * weights; MLX keeps them as constants) but must not read array data, because during a trace its inputs are
 * placeholders. Confined to the MLX thread like everything in this package; the upcall runs on the thread that
 * applies.
 *
 * <p>An exception inside the function never crosses the native frames: the upcall catches it, returns a non-zero
 * status (mlx-c then fails the apply), and {@link #apply} rethrows it.
 */
public final class MlxCompiled implements AutoCloseable {
    /** The traced function: outputs from inputs, built with {@code ops} (its scope owns every intermediate). */
    @FunctionalInterface
    public interface Graph {
        List<MlxArray> build(MlxOps ops, List<MlxArray> inputs);
    }

    private final MlxLibrary lib;
    private final MlxStream stream;
    private final Graph graph;
    private final String name;
    private final Arena arena = Arena.ofShared(); // the upcall stub and the two closure handles
    private final MemorySegment plain;     // mlx_closure over the upcall
    private final MemorySegment compiled;  // mlx_compile(plain)
    private Throwable failure;             // what the last trace threw, rethrown by apply
    private int traces;
    private boolean closed;

    private static final MethodHandle UPCALL;

    static {
        try {
            UPCALL = MethodHandles.lookup().findVirtual(MlxCompiled.class, "upcall", MlxC.closureFuncType());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public MlxCompiled(MlxOps ops, String name, Graph graph) {
        this.lib = ops.library();
        this.stream = ops.stream();
        this.graph = graph;
        this.name = name;
        MlxC c = lib.c();
        MemorySegment stub = c.closureFuncStub(UPCALL.bindTo(this), arena);
        plain = c.mlx_closure_new_func(arena, stub);
        compiled = c.mlx_closure_new(arena);
        int status = c.mlx_compile(compiled, plain, false);
        if (status != 0) {
            c.mlx_closure_free(plain);
            c.mlx_closure_free(compiled);
            arena.close();
            lib.check("mlx_compile (" + name + ")", status);
        }
    }

    /** How many times MLX traced the function so far (one per new input signature). */
    public int traces() {
        return traces;
    }

    /** Runs the compiled graph on {@code inputs}; the outputs belong to {@code ops}' scope. */
    public List<MlxArray> apply(MlxOps ops, List<MlxArray> inputs) {
        if (closed) {
            throw new IllegalStateException("mlx: " + name + " is closed");
        }
        MlxC c = lib.c();
        MemorySegment in = c.mlx_vector_array_new(Arena.ofAuto());
        MemorySegment out = c.mlx_vector_array_new(Arena.ofAuto());
        try {
            for (MlxArray a : inputs) {
                lib.check("mlx_vector_array_append_value", c.mlx_vector_array_append_value(in, a.handle()));
            }
            failure = null;
            long t0 = NativeTimes.start();
            int status = c.mlx_closure_apply(out, compiled, in);
            NativeTimes.end("mlx_closure_apply (" + name + ")", t0);
            if (failure != null) {
                Throwable f = failure;
                failure = null;
                lib.clearError();
                if (f instanceof RuntimeException r) {
                    throw r;
                }
                if (f instanceof Error e) {
                    throw e;
                }
                throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "mlx: " + name + ": " + f, f);
            }
            lib.check("mlx_closure_apply (" + name + ")", status);
            long n = c.mlx_vector_array_size(out);
            List<MlxArray> res = new ArrayList<>((int) n);
            for (long i = 0; i < n; i++) {
                MlxArray a = MlxArray.empty(lib);
                int st = c.mlx_vector_array_get(a.handle(), out, i);
                if (st != 0) {
                    a.close();
                    lib.check("mlx_vector_array_get", st);
                }
                res.add(ops.scope().track(a));
            }
            return res;
        } finally {
            c.mlx_vector_array_free(in);
            c.mlx_vector_array_free(out);
        }
    }

    /** Called by MLX through the stub: {@code *res} is an empty vector to fill, {@code input} the traced inputs. */
    private int upcall(MemorySegment resPtr, MemorySegment input) {
        try {
            traces++;
            MlxC c = lib.c();
            // *res arrives empty (no vector behind it): fill a vector of our own, then set *res to it
            MemorySegment res = c.mlx_vector_array_new(Arena.ofAuto());
            try (MlxScope scope = new MlxScope(lib)) {
                MlxOps ops = new MlxOps(stream, scope);
                ops.markTracing();
                long n = c.mlx_vector_array_size(input);
                List<MlxArray> in = new ArrayList<>((int) n);
                for (long i = 0; i < n; i++) {
                    MlxArray a = MlxArray.empty(lib);
                    int st = c.mlx_vector_array_get(a.handle(), input, i);
                    if (st != 0) {
                        a.close();
                        lib.check("mlx_vector_array_get", st);
                    }
                    in.add(scope.track(a));
                }
                for (MlxArray o : graph.build(ops, in)) {
                    lib.check("mlx_vector_array_append_value", c.mlx_vector_array_append_value(res, o.handle()));
                }
                lib.check("mlx_vector_array_set", c.mlx_vector_array_set(resPtr, res));
            } finally {
                c.mlx_vector_array_free(res);
            }
            return 0;
        } catch (Throwable t) {
            failure = t;
            return 1;
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        lib.thread().run(() -> {
            lib.c().mlx_closure_free(compiled);
            lib.c().mlx_closure_free(plain);
            arena.close();
        });
    }
}
