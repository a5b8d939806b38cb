package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * mlx-c loaded once per process: finds the library, installs a non-exiting error handler before any other call
 * (mlx-c's default handler exits the process), then checks the pinned version. Every later native call runs on the
 * one {@link MlxThread} this library owns.
 */
public final class MlxLibrary {
    /**
     * The oldest MLX these bindings accept: mlx-c 0.6's C API, which they bind symbol by symbol, wraps MLX 0.31's C++
     * API; later MLX keeps that C API (mlx-c 0.6.0 builds against MLX 0.32 with two C++ call sites adapted).
     */
    public static final String OLDEST_MLX = "0.31.0";
    /** The MLX versions the bindings were tested with (CPU and CUDA); later ones are accepted as untested. */
    public static final List<String> TESTED_MLX = List.of("0.31.1", "0.32.1");

    private static final Object LOCK = new Object();
    private static MlxLibrary loaded;
    private static Path loadedFrom;

    private final MlxC c;
    private final Path path;
    private final String version;
    private final MlxThread thread;
    private final List<MlxEnvironment.Setting> environment;
    private final boolean global;
    private final java.util.concurrent.atomic.AtomicLong operations = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong evalNanos = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong asyncEvalNanos = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong readNanos = new java.util.concurrent.atomic.AtomicLong();
    private final ThreadLocal<String> lastError = new ThreadLocal<>();
    @SuppressWarnings("unused") // keeps the upcall stub alive for the life of the process
    private MemorySegment handlerStub;

    private MlxLibrary(MlxC c, Path path, List<MlxEnvironment.Setting> environment, boolean global) {
        this.c = c;
        this.path = path;
        this.environment = environment;
        this.global = global;
        this.thread = new MlxThread();
        installErrorHandler();
        this.version = thread.call(this::readVersion);
    }

    /**
     * The library at the first existing candidate, loading it on first use; later calls return the same library.
     *
     * @throws MtpException UNAVAILABLE with the reason and how to fix it
     */
    public static MlxLibrary load(MlxDiscovery discovery) {
        synchronized (LOCK) {
            if (loaded != null) {
                return loaded;
            }
            Path p = discovery.locate();
            // into the global namespace first, as a C program links it (MlxEnvironment.loadGlobally says why)
            boolean global = MlxEnvironment.loadGlobally(p);
            // before the library's first call: MLX reads these once (MlxEnvironment says why each is needed)
            List<MlxEnvironment.Setting> env = MlxEnvironment.apply(System.getenv(), global);
            SymbolLookup lookup;
            MlxC bound;
            try {
                lookup = SymbolLookup.libraryLookup(p, Arena.global());
                bound = new MlxC(lookup);
            } catch (IllegalArgumentException | java.util.NoSuchElementException | UnsatisfiedLinkError e) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: cannot load " + p + ": " + e.getMessage()
                        + " — set MTP_MLX_LIBRARY to an mlx-c 0.6.x libmlxc", e);
            }
            MlxLibrary lib = new MlxLibrary(bound, p, env, global);
            if (compareVersions(lib.version, OLDEST_MLX) < 0) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: " + p + " reports MLX " + lib.version
                        + ", these bindings need MLX " + OLDEST_MLX + " or later (mlx-c 0.6.x) — install mlx-c 0.6 "
                        + "and set MTP_MLX_LIBRARY");
            }
            loaded = lib;
            loadedFrom = p;
            return lib;
        }
    }

    /** Where the process loaded mlx-c from, or null before the first successful load. */
    public static Path loadedPath() {
        synchronized (LOCK) {
            return loadedFrom;
        }
    }

    private void installErrorHandler() {
        try {
            MethodHandle target = MethodHandles.lookup().bind(this, "onError", MlxC.errorHandlerType());
            handlerStub = c.errorHandlerStub(target, Arena.global());
            c.mlx_set_error_handler(handlerStub, MemorySegment.NULL, MemorySegment.NULL);
        } catch (NoSuchMethodException | IllegalAccessException e) {
            throw new IllegalStateException("mlx: cannot bind the error handler", e);
        }
    }

    /** The upcall: records the native message; never throws (an exception escaping into native code kills the JVM). */
    private void onError(MemorySegment msg, MemorySegment data) {
        try {
            String text = msg.equals(MemorySegment.NULL) ? "(no message)" : msg.reinterpret(1 << 16).getString(0);
            lastError.set(text);
        } catch (Throwable t) {
            try {
                lastError.set("(unreadable native error message)");
            } catch (Throwable ignored) {
                // nothing else is safe here
            }
        }
    }

    private String readVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment str = c.mlx_string_new(a);
            check("mlx_version", c.mlx_version(str));
            String v = c.mlx_string_data(str).reinterpret(256).getString(0);
            c.mlx_string_free(str);
            return v;
        }
    }

    /** Throws BACKEND_FAILURE {@code name failed (status s): native text} when {@code status != 0}. */
    public void check(String name, int status) {
        if (status != 0) {
            String text = lastError.get();
            lastError.remove();
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, name + " failed (status " + status + "): "
                    + (text == null ? "(no native message)" : text.strip()));
        }
    }

    /** Drops a recorded native message that no status will report (e.g. after a failed trace). */
    void clearError() {
        lastError.remove();
    }

    /** The raw bindings (for {@code …mlx.handle} only). */
    MlxC c() {
        return c;
    }

    /** Whether mlx-c went into the global namespace before the JDK loaded it ({@link MlxEnvironment#loadGlobally}). */
    public boolean loadedGlobally() {
        return global;
    }

    /** The MLX environment settings in force, and whether this backend set them ({@link MlxEnvironment}). */
    public List<MlxEnvironment.Setting> environment() {
        return environment;
    }

    /** Operations (graph nodes) created through {@link MlxOps} in this process, for benchmarks. */
    public long operations() {
        return operations.get();
    }

    void countOperation() {
        operations.incrementAndGet();
    }

    /** Nanoseconds spent inside evaluations so far: running the graph and waiting for the device. */
    public long evalNanos() {
        return evalNanos.get();
    }

    void addEvalNanos(long nanos) {
        evalNanos.addAndGet(nanos);
    }

    /**
     * Nanoseconds spent inside {@code mlx_async_eval} so far: scheduling a graph and launching its device work without
     * waiting for it (on CUDA, the kernel launches themselves run on the calling thread).
     */
    public long asyncEvalNanos() {
        return asyncEvalNanos.get();
    }

    void addAsyncEvalNanos(long nanos) {
        asyncEvalNanos.addAndGet(nanos);
    }

    /**
     * Nanoseconds spent in host reads of evaluated arrays so far ({@link MlxOps#toFloats} and the like): MLX handing
     * out the data pointer (on CUDA a copy into managed memory) and the copy into Java arrays.
     */
    public long readNanos() {
        return readNanos.get();
    }

    void addReadNanos(long nanos) {
        readNanos.addAndGet(nanos);
    }

    public String version() {
        return version;
    }

    /** Null for a tested MLX ({@link #TESTED_MLX}); else a note that says this one is untested. */
    public String versionNote() {
        return versionNote(version);
    }

    static String versionNote(String version) {
        return TESTED_MLX.contains(version) ? null : "untested: these bindings were tested with MLX "
                + String.join(" and ", TESTED_MLX);
    }

    /**
     * Orders MLX versions by their numeric {@code major.minor.patch} parts (a missing or non-numeric part counts as
     * 0, and a suffix such as {@code .dev20261201} after the third part is ignored).
     */
    static int compareVersions(String a, String b) {
        int[] x = parts(a);
        int[] y = parts(b);
        for (int i = 0; i < 3; i++) {
            if (x[i] != y[i]) {
                return Integer.compare(x[i], y[i]);
            }
        }
        return 0;
    }

    private static int[] parts(String v) {
        String[] p = v.split("[.+-]", -1);
        int[] out = new int[3];
        for (int i = 0; i < 3 && i < p.length; i++) {
            String digits = p[i].replaceFirst("^(\\d*).*$", "$1");
            out[i] = digits.isEmpty() || digits.length() > 9 ? 0 : Integer.parseInt(digits);
        }
        return out;
    }

    public Path path() {
        return path;
    }

    /** The thread every native call of this library runs on. */
    public MlxThread thread() {
        return thread;
    }

    /** Whether the library has a GPU device (Metal or CUDA). */
    public boolean hasGpu() {
        return thread.call(() -> {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment res = a.allocate(ValueLayout.JAVA_BOOLEAN);
                boolean metal = c.mlx_metal_is_available(res) == 0 && res.get(ValueLayout.JAVA_BOOLEAN, 0);
                res.set(ValueLayout.JAVA_BOOLEAN, 0, false);
                boolean cuda = c.mlx_cuda_is_available(res) == 0 && res.get(ValueLayout.JAVA_BOOLEAN, 0);
                lastError.remove();
                return metal || cuda;
            }
        });
    }

    /** Whether the library's GPU is CUDA (not Metal). */
    public boolean hasCuda() {
        return thread.call(() -> {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment res = a.allocate(ValueLayout.JAVA_BOOLEAN);
                boolean cuda = c.mlx_cuda_is_available(res) == 0 && res.get(ValueLayout.JAVA_BOOLEAN, 0);
                lastError.remove();
                return cuda;
            }
        });
    }

    /** Bytes of device memory held by live arrays ({@code mlx_get_active_memory}). */
    public long activeMemory() {
        return thread.call(() -> {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment res = a.allocate(ValueLayout.JAVA_LONG);
                check("mlx_get_active_memory", c.mlx_get_active_memory(res));
                return res.get(ValueLayout.JAVA_LONG, 0);
            }
        });
    }

    /** Candidates that exist among {@code paths}, in order. */
    static List<Path> existing(List<Path> paths) {
        List<Path> out = new ArrayList<>();
        for (Path p : paths) {
            if (Files.isRegularFile(p)) {
                out.add(p);
            }
        }
        return out;
    }
}
