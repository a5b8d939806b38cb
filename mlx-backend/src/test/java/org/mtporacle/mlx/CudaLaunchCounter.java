package org.mtporacle.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts the CUDA API calls a piece of work makes, through CUPTI's callback API (libcupti, named by
 * {@code MTP_CUPTI_LIBRARY}; the CUDA toolkit and PyTorch's CUDA wheels ship it): every driver- and runtime-API entry
 * while {@link #counting} is on, by function name, plus the kernel symbol of each driver-level launch. The driver
 * domain sees every launch however it was made (MLX's own kernels, its NVRTC kernels, cuBLASLt and cuDNN inside), so
 * "launches" below are driver entries whose name contains {@code Launch} (cuLaunchKernel, cuLaunchKernelEx,
 * cuGraphLaunch, …) except {@code cuLaunchHostFunc}. Bench-only: the callback is a Java upcall per API call, so time
 * nothing while it is on.
 */
final class CudaLaunchCounter implements AutoCloseable {
    private static final int DRIVER = 1;
    private static final int RUNTIME = 2;

    private final Arena arena = Arena.ofShared();
    private final MethodHandle enableDomain;
    private final MethodHandle unsubscribe;
    private final MemorySegment subscriber;
    private final Map<String, LongAdder> driver = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> runtime = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> kernels = new ConcurrentHashMap<>();
    private final Map<Long, String> names = new ConcurrentHashMap<>();

    /** What one counted stretch saw. */
    record Counts(long launches, long driverCalls, long runtimeLaunches, Map<String, Long> byFunction,
                  Map<String, Long> byKernel) {
    }

    /** The counter over {@code MTP_CUPTI_LIBRARY}, or null with the reason printed. */
    static CudaLaunchCounter open() {
        String lib = System.getenv("MTP_CUPTI_LIBRARY");
        if (lib == null || lib.isBlank()) {
            System.out.println("launch count: not measured (MTP_CUPTI_LIBRARY unset)");
            return null;
        }
        try {
            return new CudaLaunchCounter(Path.of(lib));
        } catch (RuntimeException e) {
            System.out.println("launch count: not measured (" + lib + ": " + e.getMessage() + ")");
            return null;
        }
    }

    private CudaLaunchCounter(Path lib) {
        Linker linker = Linker.nativeLinker();
        SymbolLookup cupti = SymbolLookup.libraryLookup(lib, arena);
        MethodHandle subscribe = linker.downcallHandle(cupti.find("cuptiSubscribe").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS));
        enableDomain = linker.downcallHandle(cupti.find("cuptiEnableDomain").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_INT));
        unsubscribe = linker.downcallHandle(cupti.find("cuptiUnsubscribe").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        MemorySegment stub;
        try {
            MethodHandle cb = MethodHandles.lookup().findVirtual(CudaLaunchCounter.class, "callback",
                    MethodType.methodType(void.class, MemorySegment.class, int.class, int.class, MemorySegment.class));
            stub = linker.upcallStub(cb.bindTo(this), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS), arena);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        MemorySegment handle = arena.allocate(ValueLayout.ADDRESS);
        int st;
        try {
            st = (int) subscribe.invokeExact(handle, stub, MemorySegment.NULL);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (st != 0) {
            throw new IllegalStateException("cuptiSubscribe returned " + st);
        }
        subscriber = handle.get(ValueLayout.ADDRESS, 0);
    }

    /** Turns counting on or off (both API domains). */
    void counting(boolean on) {
        for (int d : new int[] {DRIVER, RUNTIME}) {
            int st;
            try {
                st = (int) enableDomain.invokeExact(on ? 1 : 0, subscriber, d);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            if (st != 0) {
                throw new IllegalStateException("cuptiEnableDomain(" + on + ", " + d + ") returned " + st);
            }
        }
    }

    /** What was counted since the last {@code take}, then cleared. */
    Counts take() {
        Map<String, Long> fn = new TreeMap<>();
        long launches = 0;
        long calls = 0;
        for (Map.Entry<String, LongAdder> e : driver.entrySet()) {
            long n = e.getValue().sumThenReset();
            calls += n;
            if (n > 0) {
                fn.put(e.getKey(), n);
            }
            if (isLaunch(e.getKey())) {
                launches += n;
            }
        }
        long rt = 0;
        for (Map.Entry<String, LongAdder> e : runtime.entrySet()) {
            long n = e.getValue().sumThenReset();
            if (n > 0) {
                fn.put("runtime " + e.getKey(), n);
            }
            if (isLaunch(e.getKey())) {
                rt += n;
            }
        }
        Map<String, Long> k = new TreeMap<>();
        for (Map.Entry<String, LongAdder> e : kernels.entrySet()) {
            long n = e.getValue().sumThenReset();
            if (n > 0) {
                k.put(e.getKey(), n);
            }
        }
        return new Counts(launches, calls, rt, fn, k);
    }

    static boolean isLaunch(String function) {
        return function.contains("Launch") && !function.contains("HostFunc");
    }

    /** {@code CUpti_CallbackFunc}: {@code cbdata} is a CUpti_CallbackData (site int at 0, names at 8 and 32). */
    @SuppressWarnings("unused")
    private void callback(MemorySegment user, int domain, int cbid, MemorySegment data) {
        try {
            MemorySegment d = data.reinterpret(40);
            if (d.get(ValueLayout.JAVA_INT, 0) != 0) { // CUPTI_API_ENTER only
                return;
            }
            long key = ((long) domain << 32) | (cbid & 0xffffffffL);
            String name = names.get(key);
            if (name == null) {
                MemorySegment p = d.get(ValueLayout.ADDRESS, 8);
                name = p.equals(MemorySegment.NULL) ? "cbid " + cbid : p.reinterpret(256).getString(0);
                names.put(key, name);
            }
            (domain == DRIVER ? driver : runtime).computeIfAbsent(name, x -> new LongAdder()).increment();
            if (domain == DRIVER && isLaunch(name)) {
                MemorySegment sym = d.get(ValueLayout.ADDRESS, 32);
                String s = sym.equals(MemorySegment.NULL) ? "?" : sym.reinterpret(512).getString(0);
                kernels.computeIfAbsent(shorten(s), x -> new LongAdder()).increment();
            }
        } catch (Throwable t) {
            // never let anything cross back into the driver
        }
    }

    /** A mangled kernel name cut to its first 60 characters (enough to tell MLX's kernel families apart). */
    private static String shorten(String s) {
        return s.length() > 60 ? s.substring(0, 60) : s;
    }

    @Override
    public void close() {
        try {
            counting(false);
            int st = (int) unsubscribe.invokeExact(subscriber);
        } catch (Throwable t) {
            // best effort
        }
    }
}
