package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/** {@code cblas_sgemm} from {@code libopenblas.so.0} through FFM, for the prefill comparison only. */
final class OpenBlas {
    private static final int ROW_MAJOR = 101;
    private static final int NO_TRANS = 111;
    private static final int TRANS = 112;

    private final MethodHandle sgemm;
    private final MethodHandle setThreads;

    private OpenBlas(MethodHandle sgemm, MethodHandle setThreads) {
        this.sgemm = sgemm;
        this.setThreads = setThreads;
    }

    /** The library, or empty when {@code libopenblas.so.0} cannot be loaded. */
    static Optional<OpenBlas> load() {
        SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup("libopenblas.so.0", Arena.global());
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        Linker linker = Linker.nativeLinker();
        ValueLayout i = ValueLayout.JAVA_INT;
        ValueLayout f = ValueLayout.JAVA_FLOAT;
        ValueLayout p = ValueLayout.ADDRESS;
        MethodHandle gemm = linker.downcallHandle(lib.find("cblas_sgemm").orElseThrow(),
                FunctionDescriptor.ofVoid(i, i, i, i, i, i, f, p, i, p, i, f, p, i));
        MethodHandle threads = lib.find("openblas_set_num_threads")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.ofVoid(i))).orElse(null);
        return Optional.of(new OpenBlas(gemm, threads));
    }

    void threads(int n) throws Throwable {
        if (setThreads != null) {
            setThreads.invokeExact(n);
        }
    }

    /** {@code c[m, n] = a[m, k] · b[n, k]ᵀ}, all row-major f32. */
    void sgemmAbt(MemorySegment c, MemorySegment a, MemorySegment b, int m, int n, int k) throws Throwable {
        sgemm.invokeExact(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, 1f, a, k, b, k, 0f, c, n);
    }
}
