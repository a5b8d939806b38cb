package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A CUDA kernel of our own source run as one MLX operation ({@code mlx_fast_cuda_kernel}, mlx-c 0.6): MLX writes the
 * kernel's signature from the names given here ({@code const T* input} per input, in the input's dtype; {@code T*
 * output} per output; {@code NAME_shape} when the source mentions it), prepends its device utilities, compiles the
 * source with NVRTC at first use (once per distinct name and template arguments) and launches
 * {@code ceil(grid / group)} blocks of {@code group} threads. It runs only on a CUDA GPU stream: MLX's CPU builds
 * refuse to make one ({@link #available} says so first). Confined to the MLX thread like everything in this package.
 */
public final class MlxCudaKernel implements AutoCloseable {
    private final MlxLibrary lib;
    private final String name;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment kernel;
    private boolean closed;

    /** One output: its shape and dtype. */
    public record Output(int dtype, int... shape) {
    }

    /**
     * Null when {@code stream} can run custom CUDA kernels, else the reason it cannot (no CUDA in this MLX, a CPU
     * stream, or an mlx-c without the entry points).
     */
    public static String unavailable(MlxLibrary lib, MlxStream stream) {
        if (!lib.c().hasCudaKernels()) {
            return "this mlx-c has no mlx_fast_cuda_kernel (mlx-c 0.6 or later has)";
        }
        if (!stream.isGpu()) {
            return "the stream is MLX's CPU";
        }
        if (!lib.hasCuda()) {
            return "this MLX has no CUDA backend";
        }
        return null;
    }

    /**
     * Makes the kernel {@code name} (letters, digits, underscores) with these input and output names and its body
     * {@code source}; {@code header} goes before the function (may be empty).
     */
    public MlxCudaKernel(MlxLibrary lib, String name, List<String> inputs, List<String> outputs, String source,
                         String header) {
        if (!name.matches("[A-Za-z_][A-Za-z0-9_]*") || inputs.isEmpty() || outputs.isEmpty()) {
            throw MtpException.invalidArgument("mlx_fast_cuda_kernel: name '" + name + "' with " + inputs.size()
                    + " inputs and " + outputs.size() + " outputs; expected an identifier and at least one of each");
        }
        if (!lib.c().hasCudaKernels()) {
            throw MtpException.illegalState("mlx_fast_cuda_kernel: this mlx-c does not export it");
        }
        this.lib = lib;
        this.name = name;
        MlxC c = lib.c();
        MemorySegment in = strings(c, inputs);
        MemorySegment out = strings(c, outputs);
        try {
            kernel = c.mlx_fast_cuda_kernel_new(arena, arena.allocateFrom(name), in, out, arena.allocateFrom(source),
                    arena.allocateFrom(header), true, 0);
        } finally {
            c.mlx_vector_string_free(in);
            c.mlx_vector_string_free(out);
        }
        if (kernel.get(ValueLayout.ADDRESS, 0).equals(MemorySegment.NULL)) {
            arena.close();
            lib.check("mlx_fast_cuda_kernel_new (" + name + ")", 1);
        }
    }

    private MemorySegment strings(MlxC c, List<String> names) {
        MemorySegment v = c.mlx_vector_string_new(arena);
        for (String n : names) {
            lib.check("mlx_vector_string_append_value", c.mlx_vector_string_append_value(v, arena.allocateFrom(n)));
        }
        return v;
    }

    /**
     * The kernel over {@code inputs} (MLX copies any that is not row-contiguous) with {@code grid} threads per axis in
     * blocks of {@code group}, int and bool template arguments ({@code constexpr} in the body), on {@code ops}'
     * stream; the outputs belong to {@code ops}' scope. Counts as one operation.
     */
    public List<MlxArray> apply(MlxOps ops, List<MlxArray> inputs, List<Output> outputs, int[] grid, int[] group,
                                Map<String, Object> template) {
        if (closed) {
            throw new IllegalStateException("mlx: kernel " + name + " is closed");
        }
        if (grid.length != 3 || group.length != 3) {
            throw MtpException.invalidArgument("mlx_fast_cuda_kernel_apply: grid and thread group need 3 sizes");
        }
        MlxC c = lib.c();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment config = c.mlx_fast_cuda_kernel_config_new(a);
            MemorySegment in = c.mlx_vector_array_new(a);
            MemorySegment out = c.mlx_vector_array_new(a);
            try {
                for (Output o : outputs) {
                    lib.check("mlx_fast_cuda_kernel_config_add_output_arg", c.mlx_fast_cuda_kernel_config_add_output_arg(
                            config, a.allocateFrom(ValueLayout.JAVA_INT, o.shape()), o.shape().length, o.dtype()));
                }
                lib.check("mlx_fast_cuda_kernel_config_set_grid",
                        c.mlx_fast_cuda_kernel_config_set_grid(config, grid[0], grid[1], grid[2]));
                lib.check("mlx_fast_cuda_kernel_config_set_thread_group",
                        c.mlx_fast_cuda_kernel_config_set_thread_group(config, group[0], group[1], group[2]));
                for (Map.Entry<String, Object> e : template.entrySet()) {
                    MemorySegment n = a.allocateFrom(e.getKey());
                    int st = switch (e.getValue()) {
                        case Integer i -> c.mlx_fast_cuda_kernel_config_add_template_arg_int(config, n, i);
                        case Boolean b -> c.mlx_fast_cuda_kernel_config_add_template_arg_bool(config, n, b);
                        default -> throw MtpException.invalidArgument("mlx_fast_cuda_kernel: template argument "
                                + e.getKey() + " is neither int nor bool");
                    };
                    lib.check("mlx_fast_cuda_kernel_config_add_template_arg", st);
                }
                for (MlxArray x : inputs) {
                    lib.check("mlx_vector_array_append_value", c.mlx_vector_array_append_value(in, x.handle()));
                }
                long t0 = NativeTimes.start();
                int status = c.mlx_fast_cuda_kernel_apply(out, kernel, in, config, ops.stream().handle());
                NativeTimes.end("mlx_fast_cuda_kernel_apply (" + name + ")", t0);
                lib.check("mlx_fast_cuda_kernel_apply (" + name + ")", status);
                lib.countOperation();
                long n = c.mlx_vector_array_size(out);
                List<MlxArray> res = new ArrayList<>((int) n);
                for (long i = 0; i < n; i++) {
                    MlxArray x = MlxArray.empty(lib);
                    int st = c.mlx_vector_array_get(x.handle(), out, i);
                    if (st != 0) {
                        x.close();
                        lib.check("mlx_vector_array_get", st);
                    }
                    res.add(ops.scope().track(x));
                }
                return res;
            } finally {
                c.mlx_vector_array_free(in);
                c.mlx_vector_array_free(out);
                c.mlx_fast_cuda_kernel_config_free(config);
            }
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            lib.thread().run(() -> {
                lib.c().mlx_fast_cuda_kernel_free(kernel);
                arena.close();
            });
        }
    }
}
