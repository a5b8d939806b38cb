package org.mtporacle.mlx.handle;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The MLX settings this backend needs for correct results, put into the process environment before mlx-c is loaded
 * (MLX reads them once, at its first use). A variable the user already set is left as it is, and reported so.
 *
 * <ul>
 *   <li>{@code MLX_USE_CUDA_GRAPHS=0}: with CUDA graphs, MLX 0.31's CUDA backend fails every evaluation
 *       ({@code cudaGraphAddDependencies(...) failed: invalid argument}); MLX 0.32.1's works but was slower on an H200
 *       (qwen3.5-0.8b draft round, bf16, B = 1: 1.55 ms with graphs, 1.25 ms without; README).</li>
 *   <li>{@code MLX_ENABLE_TF32=0}: MLX's CUDA backend computes f32 matmuls in TF32 by default (10-bit mantissa),
 *       which puts checkpoint NMSE near 1e-7, over the {@code f32} profile's 1e-9. bf16 matmuls are unaffected.</li>
 *   <li>{@code MLX_CUDA_SDPA_CACHE_SIZE=65536}: MLX 0.31's CUDA backend keeps one cuDNN attention graph per shape in a
 *       cache of 256 by default and fails the evaluation once it evicts too often ("Cache thrashing is happening,
 *       please set the environment variable MLX_CUDA_SDPA_CACHE_SIZE to a larger value than 256"): a precision=native
 *       target campaign on an H200, whose rows and cache lengths vary chain by chain, failed so after about 105
 *       chains in each of 4 JVMs, and ran 250 chains per JVM with 65536.</li>
 *   <li>{@code MLX_CUDA_USE_CUDNN_SDPA=0}, only where mlx-c could not be loaded into the global namespace (see
 *       {@link #loadGlobally}): MLX 0.31's CUDA backend sends bf16/f16 attention with more than one query and a
 *       head size of at most 128 to cuDNN's fused attention, whose first use then kills the process.</li>
 * </ul>
 *
 * <p>The environment is written with the C library's {@code setenv}, so MLX's own {@code getenv} sees it; Java's
 * {@link System#getenv()} keeps the values the process started with, which is how a user's own setting is told apart.
 */
public final class MlxEnvironment {

    /** One setting: the variable, the value in force, whether this backend set it, and why it matters. */
    public record Setting(String name, String value, boolean setByBackend, String reason) {
        /** {@code MLX_USE_CUDA_GRAPHS=0 (set by mtp: ...)} or {@code ... (from the environment)}. */
        public String describe() {
            return name + "=" + value + (setByBackend ? " (set by mtp: " + reason + ")" : " (from the environment)");
        }
    }

    /** What this backend sets, in order, with the reason printed by {@code mtp backends}. */
    static final Map<String, String[]> REQUIRED = Map.of(
            "MLX_USE_CUDA_GRAPHS", new String[] {"0", "CUDA graphs fail every evaluation in MLX 0.31 and slow MLX "
                    + "0.32.1's draft round"},
            "MLX_ENABLE_TF32", new String[] {"0", "f32 matmuls would run in TF32"},
            "MLX_CUDA_SDPA_CACHE_SIZE", new String[] {"65536", "MLX 0.31's CUDA attention fails evaluations once "
                    + "its cache of 256 cuDNN graphs (one per shape) thrashes"},
            "MLX_CUDA_USE_CUDNN_SDPA", new String[] {"0", "mlx-c is not in the global namespace, where cuDNN "
                    + "looks up its own symbols: its fused attention would crash the process"});
    private static final List<String> ORDER = List.of("MLX_USE_CUDA_GRAPHS", "MLX_ENABLE_TF32",
            "MLX_CUDA_SDPA_CACHE_SIZE");
    private static final String LOCAL_ONLY = "MLX_CUDA_USE_CUDNN_SDPA";

    private MlxEnvironment() {
    }

    /**
     * Sets every required variable that {@code environment} lacks, through {@code setenv}; returns what is in force.
     * Must run before the first mlx-c call of the process.
     */
    static List<Setting> apply(Map<String, String> environment, boolean loadedGlobally) {
        List<Setting> out = new ArrayList<>();
        List<String> names = new ArrayList<>(ORDER);
        if (!loadedGlobally) {
            names.add(LOCAL_ONLY);
        }
        for (String name : names) {
            String[] wanted = REQUIRED.get(name);
            String present = environment.get(name);
            if (present != null) {
                out.add(new Setting(name, present, false, wanted[1]));
                continue;
            }
            if (setenv(name, wanted[0])) {
                out.add(new Setting(name, wanted[0], true, wanted[1]));
            }
        }
        return List.copyOf(out);
    }

    /**
     * {@code dlopen(path, RTLD_NOW | RTLD_GLOBAL)} on Linux, before the JDK loads the same file for its symbol lookup;
     * true when it worked. The JDK loads native libraries with {@code RTLD_LOCAL}, and cuDNN 9, which MLX's CUDA
     * backend links, evidently looks up its own symbols through the global namespace as it starts: inside the JVM its
     * first use (MLX 0.31's fused attention in bf16 with several queries and a head size of at most 128) called address
     * 0 in {@code cudnn::graph::LibraryConfig::init} and killed the process, while the same call from a C program,
     * on its main thread or another, ran (H200, cuDNN 9.14). Loaded globally first, it runs inside the JVM too.
     * Elsewhere (macOS: Metal, no cuDNN) this does nothing and returns false.
     */
    static boolean loadGlobally(java.nio.file.Path path) {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return false;
        }
        Linker linker = Linker.nativeLinker();
        Optional<MemorySegment> sym = linker.defaultLookup().find("dlopen");
        if (sym.isEmpty()) {
            return false;
        }
        MethodHandle dlopen = linker.downcallHandle(sym.get(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        int rtldNowGlobal = 0x002 | 0x100; // glibc's RTLD_NOW | RTLD_GLOBAL
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = (MemorySegment) dlopen.invokeExact(a.allocateFrom(path.toString()), rtldNowGlobal);
            return !h.equals(MemorySegment.NULL); // a failure is the JDK's to report when it loads the file next
        } catch (Throwable t) {
            return false;
        }
    }

    /** The value the C library's {@code getenv} returns for {@code name}. */
    static Optional<String> nativeGetenv(String name) {
        Linker linker = Linker.nativeLinker();
        MethodHandle getenv = linker.defaultLookup().find("getenv")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS)))
                .orElseThrow();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = (MemorySegment) getenv.invokeExact(a.allocateFrom(name));
            return v.equals(MemorySegment.NULL) ? Optional.empty()
                    : Optional.of(v.reinterpret(Integer.MAX_VALUE).getString(0));
        } catch (Throwable t) {
            throw new IllegalStateException("mlx: getenv(" + name + ") failed", t);
        }
    }

    private static boolean setenv(String name, String value) {
        Linker linker = Linker.nativeLinker();
        Optional<MemorySegment> sym = linker.defaultLookup().find("setenv");
        if (sym.isEmpty()) {
            return false; // no setenv (not a POSIX C library): the user sets the variables
        }
        MethodHandle h = linker.downcallHandle(sym.get(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        try (Arena a = Arena.ofConfined()) {
            int status = (int) h.invokeExact(a.allocateFrom(name), a.allocateFrom(value), 0);
            return status == 0;
        } catch (Throwable t) {
            throw new IllegalStateException("mlx: setenv(" + name + ") failed", t);
        }
    }
}
