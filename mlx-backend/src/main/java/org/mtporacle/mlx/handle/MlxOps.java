package org.mtporacle.mlx.handle;

import org.mtporacle.api.DType;
import org.mtporacle.api.FloatFormats;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.ffi.MlxC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;

/**
 * The MLX verbs this backend uses, on one stream, with every result owned by one {@link MlxScope}. Each method
 * validates its arguments in Java (live handles, axes, bounds, buffer sizes) before the downcall, then turns a
 * non-zero status into {@code MtpException(BACKEND_FAILURE)} carrying the native text. Confined to the MLX thread.
 */
public final class MlxOps {
    private final MlxLibrary lib;
    private final MlxC c;
    private final MlxStream stream;
    private final MlxScope scope;
    private final Arena arena = Arena.ofAuto();
    private int hostReads;
    private MemorySegment streamOverride; // MLX's CPU stream while a cross-check builds or reads (MlxCrossCheck)
    private boolean tracing;
    private static final MemorySegment NULL_ARRAY = nullHandle();

    public MlxOps(MlxStream stream, MlxScope scope) {
        this.lib = stream.library();
        this.c = lib.c();
        this.stream = stream;
        this.scope = scope;
    }

    public MlxScope scope() {
        return scope;
    }

    public MlxLibrary library() {
        return lib;
    }

    public MlxStream stream() {
        return stream;
    }

    /** How many arrays these ops copied to the host so far ({@link #toFloats}, {@link #toInts}, {@link #toHost}). */
    public int hostReads() {
        return hostReads;
    }

    private static MemorySegment nullHandle() {
        MemorySegment s = Arena.global().allocate(MlxC.HANDLE);
        s.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        return s;
    }

    /** One native op writing its result to {@code res}; 0 on success. */
    interface Call {
        int run(MemorySegment res);
    }

    private MlxArray op(String name, Call call, MlxArray... in) {
        long t0 = NativeTimes.start();
        MlxArray res = MlxArray.empty(lib);
        int status;
        try {
            status = call.run(res.handle());
        } catch (RuntimeException e) {
            res.close();
            throw e;
        }
        NativeTimes.end(name, t0);
        if (status != 0) {
            res.close();
            lib.check(name, status);
        }
        lib.countOperation();
        MlxArray out = scope.track(res);
        if (MlxCrossCheck.ON && streamOverride == null && !tracing && (stream.isGpu() || MlxCrossCheck.ALSO_CPU)) {
            MlxCrossCheck.record(this, name, call, out, in);
        }
        return out;
    }

    private MemorySegment s() {
        return streamOverride != null ? streamOverride : stream.handle();
    }

    /** Marks these ops as building an {@code mlx_compile} trace, whose arrays are placeholders (MlxCompiled). */
    void markTracing() {
        tracing = true;
    }

    /**
     * {@code call} built again on {@code on} over the same inputs, unevaluated ({@link MlxCrossCheck}'s twin of an
     * op); null when MLX refuses to build it there.
     */
    MlxArray twin(Call call, MlxStream on) {
        streamOverride = on.handle();
        MlxArray res = MlxArray.empty(lib);
        try {
            if (call.run(res.handle()) != 0) {
                res.close();
                lib.clearError();
                return null;
            }
            return res;
        } finally {
            streamOverride = null;
        }
    }

    /**
     * {@code a}'s values read through {@code on} ({@link MlxCrossCheck}): f32 for f32/f16/bf16 arrays, else int32
     * (bool as 0/1, uint32 as its bits); no host-read count, no cross-check.
     */
    Object readThrough(MlxArray a, MlxStream on) {
        int dt = a.dtype();
        boolean floats = dt == MlxC.MLX_FLOAT32 || dt == MlxC.MLX_FLOAT16 || dt == MlxC.MLX_BFLOAT16;
        int want = floats ? MlxC.MLX_FLOAT32 : dt == MlxC.MLX_UINT32 ? MlxC.MLX_UINT32 : MlxC.MLX_INT32;
        try (MlxScope temp = new MlxScope(lib)) {
            MlxOps t = new MlxOps(stream, temp);
            t.streamOverride = on.handle();
            MlxArray f = t.contiguous(dt == want ? a : t.astype(a, want));
            lib.check("mlx_array_eval", c.mlx_array_eval(f.handle()));
            long n = c.mlx_array_size(f.handle());
            if (n == 0) {
                return floats ? new float[0] : new int[0];
            }
            MemorySegment p = floats ? c.mlx_array_data_float32(f.handle())
                    : want == MlxC.MLX_UINT32 ? c.mlx_array_data_uint32(f.handle())
                    : c.mlx_array_data_int32(f.handle());
            return floats ? p.reinterpret(4 * n).toArray(ValueLayout.JAVA_FLOAT)
                    : p.reinterpret(4 * n).toArray(ValueLayout.JAVA_INT);
        }
    }

    private MemorySegment ints(int... v) {
        return v.length == 0 ? arena.allocate(4) : arena.allocateFrom(ValueLayout.JAVA_INT, v);
    }

    private static int axis(String op, MlxArray a, int axis) {
        int r = a.rank();
        int ax = axis < 0 ? axis + r : axis;
        if (ax < 0 || ax >= r) {
            throw MtpException.invalidArgument(op + ": axis " + axis + " outside rank " + r);
        }
        return ax;
    }

    // ---- host → device

    /** A copy of {@code t} on the device in its own dtype (F32, F16, BF16, I32 or U32). */
    public MlxArray fromHost(HostTensor t) {
        int dtype = switch (t.dtype()) {
            case F32 -> MlxC.MLX_FLOAT32;
            case F16 -> MlxC.MLX_FLOAT16;
            case BF16 -> MlxC.MLX_BFLOAT16;
            case I32 -> MlxC.MLX_INT32;
            case U32 -> MlxC.MLX_UINT32;
            default -> throw MtpException.invalidArgument("mlx: cannot upload dtype " + t.dtype());
        };
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = t.copyTo(a);
            return newData(data, t.shape(), dtype, t.dtype().byteSize());
        }
    }

    /** A copy of {@code values} shaped {@code shape} as f32. */
    public MlxArray fromFloats(float[] values, int... shape) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = values.length == 0 ? a.allocate(4) : a.allocateFrom(ValueLayout.JAVA_FLOAT, values);
            return newData(data, shape, MlxC.MLX_FLOAT32, 4, values.length);
        }
    }

    /**
     * {@code values} shaped {@code shape} as {@code dtype}: f32 as they are, bf16 rounded on the host (to nearest,
     * ties to even, exactly as {@code mlx_astype} rounds), so the device gets one upload and no conversion kernel.
     * Other dtypes go up as f32 and are converted on the device.
     */
    public MlxArray fromFloatsAs(float[] values, int dtype, int... shape) {
        if (dtype == MlxC.MLX_FLOAT32) {
            return fromFloats(values, shape);
        }
        if (dtype != MlxC.MLX_BFLOAT16) {
            return astype(fromFloats(values, shape), dtype);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = a.allocate(2L * Math.max(1, values.length));
            for (int i = 0; i < values.length; i++) {
                data.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * i, FloatFormats.f32ToBf16(values[i]));
            }
            return newData(data, shape, MlxC.MLX_BFLOAT16, 2, values.length);
        }
    }

    /** A copy of {@code values} shaped {@code shape} as int32. */
    public MlxArray fromInts(int[] values, int... shape) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = values.length == 0 ? a.allocate(4) : a.allocateFrom(ValueLayout.JAVA_INT, values);
            return newData(data, shape, MlxC.MLX_INT32, 4, values.length);
        }
    }

    /** A copy of {@code values} shaped {@code shape} as uint32 (each int's 32 bits, read unsigned). */
    public MlxArray fromUints(int[] values, int... shape) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = values.length == 0 ? a.allocate(4) : a.allocateFrom(ValueLayout.JAVA_INT, values);
            return newData(data, shape, MlxC.MLX_UINT32, 4, values.length);
        }
    }

    /** A copy of {@code values} shaped {@code shape} as bool. */
    public MlxArray fromBools(boolean[] values, int... shape) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment data = a.allocate(Math.max(1, values.length));
            for (int i = 0; i < values.length; i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) (values[i] ? 1 : 0));
            }
            return newData(data, shape, MlxC.MLX_BOOL, 1, values.length);
        }
    }

    private MlxArray newData(MemorySegment data, int[] shape, int dtype, int elementBytes) {
        long n = 1;
        for (int d : shape) {
            n *= d;
        }
        return newData(data, shape, dtype, elementBytes, n);
    }

    private MlxArray newData(MemorySegment data, int[] shape, int dtype, int elementBytes, long count) {
        long n = 1;
        for (int d : shape) {
            if (d < 0) {
                throw MtpException.invalidArgument("mlx: negative dimension in shape " + Arrays.toString(shape));
            }
            n *= d;
        }
        if (n != count || data.byteSize() < n * elementBytes) {
            throw MtpException.invalidArgument("mlx: " + count + " host values (" + data.byteSize()
                    + " bytes) do not fill shape " + Arrays.toString(shape));
        }
        long t0 = NativeTimes.start();
        MemorySegment h = c.mlx_array_new_data(Arena.ofAuto(), data, ints(shape), shape.length, dtype);
        NativeTimes.end("mlx_array_new_data", t0);
        MlxArray a = new MlxArray(lib, h);
        if (h.get(ValueLayout.ADDRESS, 0).equals(MemorySegment.NULL)) {
            lib.check("mlx_array_new_data", 1);
        }
        scope.track(a);
        if (MlxCrossCheck.ON && streamOverride == null && !tracing && (stream.isGpu() || MlxCrossCheck.ALSO_CPU)) {
            MlxCrossCheck.uploaded(this, a);
        }
        return a;
    }

    /** {@code 0, 1, …, n − 1} as int32 {@code [n]}, made on the device. */
    public MlxArray arange(int n) {
        if (n < 0) {
            throw MtpException.invalidArgument("mlx_arange: negative length " + n);
        }
        return op("mlx_arange", r -> c.mlx_arange(r, 0, n, 1, MlxC.MLX_INT32, s()));
    }

    /** Zeros of {@code shape} and {@code dtype}. */
    public MlxArray zeros(int dtype, int... shape) {
        for (int d : shape) {
            if (d < 0) {
                throw MtpException.invalidArgument("mlx_zeros: negative dimension in " + Arrays.toString(shape));
            }
        }
        return op("mlx_zeros", r -> c.mlx_zeros(r, ints(shape), shape.length, dtype, s()));
    }

    // ---- device → host

    /** Evaluates {@code a} (its pending graph). */
    public void eval(MlxArray a) {
        long start = System.nanoTime();
        int status = c.mlx_array_eval(a.handle());
        lib.addEvalNanos(System.nanoTime() - start);
        NativeTimes.end("mlx_array_eval", start);
        lib.check("mlx_array_eval", status);
        if (MlxCrossCheck.ON && streamOverride == null) {
            MlxCrossCheck.afterEval(this);
        }
    }

    /**
     * Whether {@code a}'s data is computed and ready (uploaded, or evaluated with its device work done), so evaluating
     * it would only wait on a finished event; false when this mlx-c cannot tell.
     */
    public boolean isAvailable(MlxArray a) {
        if (!c.hasArrayIsAvailable()) {
            return false;
        }
        MemorySegment res = arena.allocate(ValueLayout.JAVA_BOOLEAN);
        lib.check("_mlx_array_is_available", c.mlx_array_is_available(res, a.handle()));
        return res.get(ValueLayout.JAVA_BOOLEAN, 0);
    }

    /** Evaluates every array of {@code arrays} in one {@code mlx_eval} (one wait instead of one per array). */
    public void evalAll(List<MlxArray> arrays) {
        if (arrays.isEmpty()) {
            return;
        }
        long nanos = evaluate(arrays, "mlx_eval", c::mlx_eval);
        lib.addEvalNanos(nanos);
        if (MlxCrossCheck.ON && streamOverride == null) {
            MlxCrossCheck.afterEval(this);
        }
    }

    /**
     * Schedules the evaluation of every array of {@code arrays} in one {@code mlx_async_eval} and returns without
     * waiting: the device starts on them while the caller builds more graph. A later {@link #evalAll} or host read
     * waits as usual; the values are the same as with {@link #evalAll}.
     */
    public void asyncEvalAll(List<MlxArray> arrays) {
        if (arrays.isEmpty()) {
            return;
        }
        lib.addAsyncEvalNanos(evaluate(arrays, "mlx_async_eval", c::mlx_async_eval));
    }

    /**
     * Runs {@code eval} ({@code mlx_eval} or {@code mlx_async_eval}, named {@code name}) over one vector of
     * {@code arrays}; returns the nanoseconds spent inside it.
     */
    private long evaluate(List<MlxArray> arrays, String name, java.util.function.ToIntFunction<MemorySegment> eval) {
        MemorySegment v = c.mlx_vector_array_new(Arena.ofAuto());
        try {
            for (MlxArray a : arrays) {
                lib.check("mlx_vector_array_append_value", c.mlx_vector_array_append_value(v, a.handle()));
            }
            long start = System.nanoTime();
            int status = eval.applyAsInt(v);
            long nanos = System.nanoTime() - start;
            NativeTimes.end(name, start);
            lib.check(name, status);
            return nanos;
        } finally {
            c.mlx_vector_array_free(v);
        }
    }

    /** {@code a} widened to f32 on the host (bf16/f16 → f32 is exact). Evaluates and makes contiguous first. */
    public float[] toFloats(MlxArray a) {
        long n = 1;
        for (int d : a.shape()) {
            n *= d;
        }
        if (n > Integer.MAX_VALUE) {
            throw MtpException.invalidArgument("toFloats: " + n + " values do not fit one Java array");
        }
        return toFloatParts(a, READ_THREADS, new int[] {(int) n})[0];
    }

    /**
     * {@code a} widened to f32 on the host, flattened and cut into consecutive parts of {@code lengths} values (which
     * add up to its size), copied straight into one Java array each. Evaluates and makes contiguous first.
     */
    public float[][] toFloatParts(MlxArray a, int... lengths) {
        return toFloatParts(a, READ_THREADS, lengths.clone());
    }

    /** As {@link #toFloatParts(MlxArray, int...)}, the copy split over up to {@code threads} threads. */
    public float[][] toFloatParts(MlxArray a, int threads, int[] lengths) {
        MemorySegment[] parts = new MemorySegment[lengths.length];
        float[][] out = new float[lengths.length][];
        for (int i = 0; i < lengths.length; i++) {
            if (lengths[i] < 0) {
                throw MtpException.invalidArgument("toFloatParts: a part of " + lengths[i] + " values");
            }
            out[i] = new float[lengths[i]];
            parts[i] = MemorySegment.ofArray(out[i]);
        }
        readFloats(a, threads, parts);
        return out;
    }

    /**
     * Copies {@code a}, widened to f32, into {@code parts}: consecutive ranges of its flattened values, in the host's
     * byte order, whose byte sizes add up to four per value (on the little-endian hosts MLX runs on, the layout of an
     * F32 {@link HostTensor}). Evaluates and makes contiguous first. Reads of {@link #PARALLEL_READ_BYTES} or more are
     * split over up to {@code threads} threads: on CUDA MLX hands out managed memory whose pages migrate to the host on
     * first touch, one fault per page, and faults of several threads are served in parallel.
     */
    public void readFloats(MlxArray a, int threads, MemorySegment... parts) {
        MlxArray f = contiguous(a.dtype() == MlxC.MLX_FLOAT32 ? a : astype(a, MlxC.MLX_FLOAT32));
        eval(f);
        hostReads++;
        long start = System.nanoTime();
        long n = c.mlx_array_size(f.handle());
        long sum = 0;
        for (MemorySegment part : parts) {
            if (part.isReadOnly() || part.byteSize() % 4 != 0) {
                throw MtpException.invalidArgument("readFloats: a destination of " + part.byteSize() + " bytes"
                        + (part.isReadOnly() ? ", read-only" : ", not whole f32 values"));
            }
            sum += part.byteSize();
        }
        if (sum != 4 * n) {
            throw MtpException.invalidArgument("readFloats: destinations of " + sum + " bytes for an array of " + n
                    + " f32 values");
        }
        if (n == 0) {
            return;
        }
        long d0 = NativeTimes.start();
        MemorySegment p = c.mlx_array_data_float32(f.handle()); // on CUDA: MLX copies the buffer to managed memory
        NativeTimes.end("mlx_array_data_float32", d0);
        if (p.equals(MemorySegment.NULL)) {
            lib.check("mlx_array_data_float32", 1);
        }
        MemorySegment src = p.reinterpret(4 * n);
        long t0 = NativeTimes.start();
        int t = n * 4 >= PARALLEL_READ_BYTES ? Math.max(1, threads) : 1;
        if (t == 1) {
            copyRange(src, parts, 0, n);
        } else {
            long chunk = (n + t - 1) / t;
            java.util.concurrent.Future<?>[] rest = new java.util.concurrent.Future<?>[t - 1];
            for (int k = 1; k < t; k++) {
                long from = Math.min(n, k * chunk);
                long to = Math.min(n, from + chunk);
                rest[k - 1] = readers().submit(() -> copyRange(src, parts, from, to));
            }
            copyRange(src, parts, 0, Math.min(n, chunk));
            for (java.util.concurrent.Future<?> part : rest) {
                join(part);
            }
        }
        NativeTimes.end("host read (f32 copy)", t0);
        lib.addReadNanos(System.nanoTime() - start);
    }

    private static <T> T join(java.util.concurrent.Future<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("host read interrupted", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("host read failed: " + e.getCause(), e.getCause());
        }
    }

    /** Copies values {@code [from, to)} of {@code src} into the parts that hold them. */
    private static void copyRange(MemorySegment src, MemorySegment[] parts, long from, long to) {
        long base = 0;
        for (MemorySegment part : parts) {
            long values = part.byteSize() / 4;
            long lo = Math.max(from, base);
            long hi = Math.min(to, base + values);
            if (lo < hi) {
                MemorySegment.copy(src, lo * 4, part, (lo - base) * 4, (hi - lo) * 4);
            }
            base += values;
        }
    }

    /**
     * Host buffers of {@code bytes} each, allocated (and so zeroed) on a reader thread while the caller goes on: a
     * forward asks for its read's destinations before it builds and evaluates its graph, and finds them ready after.
     * Heap arrays where they fit one, so that a {@link HostTensor} over them can become a {@code ByteBuffer}.
     */
    public static java.util.concurrent.Future<MemorySegment[]> hostBuffers(long... bytes) {
        long[] sizes = bytes.clone();
        return readers().submit(() -> {
            MemorySegment[] out = new MemorySegment[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                out[i] = sizes[i] <= MAX_HEAP_BUFFER ? MemorySegment.ofArray(new byte[(int) sizes[i]])
                        : Arena.ofAuto().allocate(sizes[i], 8);
            }
            return out;
        });
    }

    /** The buffers of {@link #hostBuffers}, once allocated. */
    public static MemorySegment[] await(java.util.concurrent.Future<MemorySegment[]> buffers) {
        return join(buffers);
    }

    /** The largest host buffer {@link #hostBuffers} allocates as a Java array. */
    static final long MAX_HEAP_BUFFER = Integer.MAX_VALUE - 8;

    /** Host reads at least this large are split over {@link #READ_THREADS} threads. */
    public static final long PARALLEL_READ_BYTES = 1L << 20;
    /** Threads of a large host read: {@code mtp.mlx.readThreads}, else 8 or the processors if fewer. */
    public static final int READ_THREADS = Math.max(1, Integer.getInteger("mtp.mlx.readThreads",
            Math.min(8, Runtime.getRuntime().availableProcessors())));
    private static volatile java.util.concurrent.ExecutorService readers;

    private static java.util.concurrent.ExecutorService readers() {
        java.util.concurrent.ExecutorService r = readers;
        if (r == null) {
            synchronized (MlxOps.class) {
                r = readers;
                if (r == null) {
                    r = java.util.concurrent.Executors.newCachedThreadPool(job -> {
                        Thread th = new Thread(job, "mlx-host-read");
                        th.setDaemon(true);
                        return th;
                    });
                    readers = r;
                }
            }
        }
        return r;
    }

    /** {@code a} as int32 on the host. Evaluates and makes contiguous first. */
    public int[] toInts(MlxArray a) {
        MlxArray f = contiguous(a.dtype() == MlxC.MLX_INT32 ? a : astype(a, MlxC.MLX_INT32));
        eval(f);
        hostReads++;
        long n = c.mlx_array_size(f.handle());
        MemorySegment p = c.mlx_array_data_int32(f.handle());
        if (n > 0 && p.equals(MemorySegment.NULL)) {
            lib.check("mlx_array_data_int32", 1);
        }
        long t0 = NativeTimes.start();
        int[] out = n == 0 ? new int[0] : p.reinterpret(4 * n).toArray(ValueLayout.JAVA_INT);
        NativeTimes.end("host read (int32 copy)", t0);
        return out;
    }

    /** {@code a} on the host as a tensor of {@code dtype} (F32 or BF16; values are exact widenings). */
    public HostTensor toHost(MlxArray a, DType dtype) {
        float[] v = toFloats(a);
        return dtype == DType.F32 ? HostTensor.ofFloats(v, a.shape()) : HostTensor.ofFloats(dtype, v, a.shape());
    }

    // ---- elementwise

    public MlxArray add(MlxArray a, MlxArray b) {
        return op("mlx_add", r -> c.mlx_add(r, a.handle(), b.handle(), s()), a, b);
    }

    public MlxArray subtract(MlxArray a, MlxArray b) {
        return op("mlx_subtract", r -> c.mlx_subtract(r, a.handle(), b.handle(), s()), a, b);
    }

    public MlxArray multiply(MlxArray a, MlxArray b) {
        return op("mlx_multiply", r -> c.mlx_multiply(r, a.handle(), b.handle(), s()), a, b);
    }

    /** {@code a / b} elementwise (broadcasting), IEEE division in the promoted dtype. */
    public MlxArray divide(MlxArray a, MlxArray b) {
        return op("mlx_divide", r -> c.mlx_divide(r, a.handle(), b.handle(), s()), a, b);
    }

    /** MLX's {@code exp} (on the CPU the polynomial written out in conformance/SPEC.md, "Random stream" §5). */
    public MlxArray exp(MlxArray a) {
        return op("mlx_exp", r -> c.mlx_exp(r, a.handle(), s()), a);
    }

    /** {@code ln(1 + a)} elementwise. */
    public MlxArray log1p(MlxArray a) {
        return op("mlx_log1p", r -> c.mlx_log1p(r, a.handle(), s()), a);
    }

    public MlxArray negative(MlxArray a) {
        return op("mlx_negative", r -> c.mlx_negative(r, a.handle(), s()), a);
    }

    /** {@code a == ±inf}, as bool. */
    public MlxArray isinf(MlxArray a) {
        return op("mlx_isinf", r -> c.mlx_isinf(r, a.handle(), s()), a);
    }

    /** {@code a == b} elementwise (broadcasting), as bool. */
    public MlxArray equal(MlxArray a, MlxArray b) {
        return op("mlx_equal", r -> c.mlx_equal(r, a.handle(), b.handle(), s()), a, b);
    }

    /** {@code a > b} elementwise (broadcasting), as bool; false when either is NaN. */
    public MlxArray greater(MlxArray a, MlxArray b) {
        return op("mlx_greater", r -> c.mlx_greater(r, a.handle(), b.handle(), s()), a, b);
    }

    /** {@code a < b} elementwise (broadcasting), as bool; false when either is NaN. */
    public MlxArray less(MlxArray a, MlxArray b) {
        return op("mlx_less", r -> c.mlx_less(r, a.handle(), b.handle(), s()), a, b);
    }

    public MlxArray logicalAnd(MlxArray a, MlxArray b) {
        return op("mlx_logical_and", r -> c.mlx_logical_and(r, a.handle(), b.handle(), s()), a, b);
    }

    public MlxArray logicalNot(MlxArray a) {
        return op("mlx_logical_not", r -> c.mlx_logical_not(r, a.handle(), s()), a);
    }

    /** {@code condition ? x : y} elementwise (broadcasting); {@code condition} must be bool. */
    public MlxArray where(MlxArray condition, MlxArray x, MlxArray y) {
        if (condition.dtype() != MlxC.MLX_BOOL) {
            throw MtpException.invalidArgument("mlx_where: condition dtype " + condition.dtype() + " is not bool");
        }
        return op("mlx_where", r -> c.mlx_where(r, condition.handle(), x.handle(), y.handle(), s()), condition, x, y);
    }

    public MlxArray sigmoid(MlxArray a) {
        return op("mlx_sigmoid", r -> c.mlx_sigmoid(r, a.handle(), s()), a);
    }

    public MlxArray astype(MlxArray a, int dtype) {
        return op("mlx_astype", r -> c.mlx_astype(r, a.handle(), dtype, s()), a);
    }

    public MlxArray contiguous(MlxArray a) {
        return op("mlx_contiguous", r -> c.mlx_contiguous(r, a.handle(), false, s()), a);
    }

    // ---- linear algebra

    /** {@code a · b}; shape errors come back from MLX as BACKEND_FAILURE. */
    public MlxArray matmul(MlxArray a, MlxArray b) {
        return op("mlx_matmul", r -> c.mlx_matmul(r, a.handle(), b.handle(), s()), a, b);
    }

    /** {@code x · dequantize(w)ᵀ} for MLX affine weights (spec §2). */
    public MlxArray quantizedMatmul(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize,
                                    int bits) {
        checkQuant(groupSize, bits);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment g = optionalInt(a, groupSize);
            MemorySegment b = optionalInt(a, bits);
            MemorySegment mode = a.allocateFrom("affine");
            return op("mlx_quantized_matmul", r -> c.mlx_quantized_matmul(r, x.handle(), w.handle(),
                    scales.handle(), biases == null ? NULL_ARRAY : biases.handle(), true, g, b, mode, s()),
                    x, w, scales, biases);
        }
    }

    /**
     * Indices of the {@code k} largest values of {@code a [N, E]} along its last axis, in descending value, the lower
     * index first among exactly equal values (spec §12.3 step 3): the first {@code k} of the stable ascending
     * {@link #argsort} of {@code −a} (NaN last). The result can only index an axis of length {@code E}, which is what
     * {@link #gatherMm} and {@link #gatherQmm} check instead of reading the values back.
     */
    public TopK topK(MlxArray a, int k) {
        if (a.rank() != 2) {
            throw MtpException.invalidArgument("mlx topK: rank " + a.rank() + ", expected [N, E]");
        }
        int e = a.dim(1);
        if (k < 1 || k > e) {
            throw MtpException.invalidArgument("mlx topK: k = " + k + " outside [1, " + e + "]");
        }
        MlxArray order = argsort(negative(a), -1);
        return new TopK(slice(order, new int[] {0, 0}, new int[] {a.dim(0), k}), e);
    }

    /**
     * Top-k expert indices {@code [N, K]} (uint32) computed on the device by {@link #topK}: every value lies in
     * {@code [0, range)} by construction, so no host value ever indexes a gathered matmul.
     */
    public static final class TopK {
        private final MlxArray indices;
        private final int range;

        private TopK(MlxArray indices, int range) {
            this.indices = indices;
            this.range = range;
        }

        public MlxArray indices() {
            return indices;
        }

        /** The length of the axis the indices select from. */
        public int range() {
            return range;
        }
    }

    /**
     * {@code out[n, j] = a[n or n, j] · b[top[n, j]]} (MLX {@code gather_mm}, rhs indices only): {@code a} is
     * {@code [N, 1, M, K]} or {@code [N, J, M, K]}, {@code b} is {@code [E, K, P]}, {@code top} is {@code [N, J]}
     * indices into {@code E}; the result is {@code [N, J, M, P]}.
     */
    public MlxArray gatherMm(MlxArray a, MlxArray b, TopK top) {
        int[] idx = top.indices().shape();
        if (b.rank() != 3 || b.dim(0) != top.range()) {
            throw MtpException.invalidArgument("mlx_gather_mm: b " + Arrays.toString(b.shape()) + ", expected ["
                    + top.range() + ", K, P] for indices into " + top.range());
        }
        checkGatherLhs("mlx_gather_mm", a, idx, b.dim(1));
        return op("mlx_gather_mm", r -> c.mlx_gather_mm(r, a.handle(), b.handle(), NULL_ARRAY,
                top.indices().handle(), false, s()), a, b, top.indices());
    }

    /**
     * {@code out[n, j] = x[n, ·] · dequantize(w[top[n, j]])ᵀ} (MLX {@code gather_qmm}, affine, transposed, rhs indices
     * only): {@code x} is {@code [N, 1, M, K]} or {@code [N, J, M, K]}, {@code w} the stacked codes
     * {@code [E, P, K·bits/32]} (uint32) with {@code scales}/{@code biases} {@code [E, P, K/groupSize]}; the result is
     * {@code [N, J, M, P]}.
     */
    public MlxArray gatherQmm(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, TopK top, int groupSize,
                              int bits) {
        checkQuant(groupSize, bits);
        int e = top.range();
        if (w.rank() != 3 || w.dtype() != MlxC.MLX_UINT32 || w.dim(0) != e) {
            throw MtpException.invalidArgument("mlx_gather_qmm: codes " + Arrays.toString(w.shape()) + " dtype "
                    + w.dtype() + ", expected uint32 [" + e + ", P, K·bits/32]");
        }
        int k = x.rank() == 0 ? -1 : x.dim(x.rank() - 1);
        int[] want = {e, w.dim(1), k / groupSize};
        if (k % groupSize != 0 || (long) k * bits != 32L * w.dim(2) || !Arrays.equals(scales.shape(), want)
                || biases != null && !Arrays.equals(biases.shape(), want)) {
            throw MtpException.invalidArgument("mlx_gather_qmm: x width " + k + ", codes "
                    + Arrays.toString(w.shape()) + ", scales " + Arrays.toString(scales.shape()) + ", biases "
                    + (biases == null ? "none" : Arrays.toString(biases.shape())) + " do not describe " + bits
                    + "-bit groups of " + groupSize + " (expected scales " + Arrays.toString(want) + ")");
        }
        checkGatherLhs("mlx_gather_qmm", x, top.indices().shape(), k);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment g = optionalInt(a, groupSize);
            MemorySegment b = optionalInt(a, bits);
            MemorySegment mode = a.allocateFrom("affine");
            return op("mlx_gather_qmm", r -> c.mlx_gather_qmm(r, x.handle(), w.handle(), scales.handle(),
                    biases == null ? NULL_ARRAY : biases.handle(), NULL_ARRAY, top.indices().handle(), true, g, b,
                    mode, false, s()), x, w, scales, biases, top.indices());
        }
    }

    /** {@code a [N, 1 or J, M, width]} against indices {@code [N, J]}. */
    private static void checkGatherLhs(String op, MlxArray a, int[] idx, int width) {
        int[] sh = a.shape();
        if (idx.length != 2 || sh.length != 4 || sh[0] != idx[0] || sh[1] != 1 && sh[1] != idx[1]
                || sh[3] != width) {
            throw MtpException.invalidArgument(op + ": input " + Arrays.toString(sh) + " and indices "
                    + Arrays.toString(idx) + ", expected [N, 1 or J, M, " + width + "] with indices [N, J]");
        }
    }

    /** The affine weights {@code w} dequantized (spec §2), in the scales' dtype. */
    public MlxArray dequantize(MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        checkQuant(groupSize, bits);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment g = optionalInt(a, groupSize);
            MemorySegment b = optionalInt(a, bits);
            MemorySegment none = a.allocate(MlxC.OPTIONAL_INT); // has_value = false
            MemorySegment mode = a.allocateFrom("affine");
            return op("mlx_dequantize", r -> c.mlx_dequantize(r, w.handle(), scales.handle(),
                    biases == null ? NULL_ARRAY : biases.handle(), g, b, mode, NULL_ARRAY, none, s()),
                    w, scales, biases);
        }
    }

    private static void checkQuant(int groupSize, int bits) {
        if (groupSize != 32 && groupSize != 64 && groupSize != 128) {
            throw MtpException.invalidArgument("mlx: group size " + groupSize + " not in {32, 64, 128}");
        }
        if (bits < 2 || bits > 8 || bits == 7) {
            throw MtpException.invalidArgument("mlx: bits " + bits + " not in {2, 3, 4, 5, 6, 8}");
        }
    }

    private static MemorySegment optionalInt(Arena a, int v) {
        MemorySegment o = a.allocate(MlxC.OPTIONAL_INT);
        o.set(ValueLayout.JAVA_INT, 0, v);
        o.set(ValueLayout.JAVA_BOOLEAN, 4, true);
        return o;
    }

    // ---- shape

    public MlxArray reshape(MlxArray a, int... shape) {
        long n = 1;
        for (int d : shape) {
            if (d < 0) {
                throw MtpException.invalidArgument("mlx_reshape: negative dimension in " + Arrays.toString(shape));
            }
            n *= d;
        }
        long have = 1;
        for (int d : a.shape()) {
            have *= d;
        }
        if (n != have) {
            throw MtpException.invalidArgument("mlx_reshape: " + Arrays.toString(a.shape()) + " cannot become "
                    + Arrays.toString(shape));
        }
        return op("mlx_reshape", r -> c.mlx_reshape(r, a.handle(), ints(shape), shape.length, s()), a);
    }

    public MlxArray transpose(MlxArray a, int... axes) {
        int rank = a.rank();
        boolean[] seen = new boolean[rank];
        if (axes.length != rank) {
            throw MtpException.invalidArgument("mlx_transpose_axes: " + axes.length + " axes for rank " + rank);
        }
        for (int x : axes) {
            if (x < 0 || x >= rank || seen[x]) {
                throw MtpException.invalidArgument("mlx_transpose_axes: bad permutation " + Arrays.toString(axes));
            }
            seen[x] = true;
        }
        return op("mlx_transpose_axes", r -> c.mlx_transpose_axes(r, a.handle(), ints(axes), axes.length, s()), a);
    }

    /** {@code a[start:stop]} per axis, stride 1. */
    public MlxArray slice(MlxArray a, int[] start, int[] stop) {
        checkBounds("mlx_slice", a.shape(), start, stop);
        int[] strides = new int[start.length];
        Arrays.fill(strides, 1);
        return op("mlx_slice", r -> c.mlx_slice(r, a.handle(), ints(start), start.length, ints(stop), stop.length,
                ints(strides), strides.length, s()), a);
    }

    /** {@code src} with {@code src[start:stop] = update}. */
    public MlxArray sliceUpdate(MlxArray src, MlxArray update, int[] start, int[] stop) {
        int[] shape = src.shape();
        checkBounds("mlx_slice_update", shape, start, stop);
        int[] u = update.shape();
        for (int i = 0; i < start.length; i++) {
            if (u.length != start.length || u[i] != stop[i] - start[i]) {
                throw MtpException.invalidArgument("mlx_slice_update: update " + Arrays.toString(u)
                        + " does not fill " + Arrays.toString(start) + ".." + Arrays.toString(stop));
            }
        }
        int[] strides = new int[start.length];
        Arrays.fill(strides, 1);
        return op("mlx_slice_update", r -> c.mlx_slice_update(r, src.handle(), update.handle(), ints(start),
                start.length, ints(stop), stop.length, ints(strides), strides.length, s()), src, update);
    }

    private static void checkBounds(String op, int[] shape, int[] start, int[] stop) {
        if (start.length != shape.length || stop.length != shape.length) {
            throw MtpException.invalidArgument(op + ": bounds rank does not match " + Arrays.toString(shape));
        }
        for (int i = 0; i < shape.length; i++) {
            if (start[i] < 0 || stop[i] < start[i] || stop[i] > shape[i]) {
                throw MtpException.invalidArgument(op + ": bounds " + Arrays.toString(start) + ".."
                        + Arrays.toString(stop) + " outside " + Arrays.toString(shape));
            }
        }
    }

    public MlxArray concatenate(List<MlxArray> arrays, int axis) {
        if (arrays.isEmpty()) {
            throw MtpException.invalidArgument("mlx_concatenate_axis: no arrays");
        }
        axis("mlx_concatenate_axis", arrays.getFirst(), axis);
        return withVector(arrays, v -> op("mlx_concatenate_axis", r -> c.mlx_concatenate_axis(r, v, axis, s()),
                arrays.toArray(MlxArray[]::new)));
    }

    public MlxArray stack(List<MlxArray> arrays) {
        if (arrays.isEmpty()) {
            throw MtpException.invalidArgument("mlx_stack: no arrays");
        }
        return withVector(arrays, v -> op("mlx_stack", r -> c.mlx_stack(r, v, s()), arrays.toArray(MlxArray[]::new)));
    }

    private MlxArray withVector(List<MlxArray> arrays, java.util.function.Function<MemorySegment, MlxArray> f) {
        MemorySegment v = c.mlx_vector_array_new(Arena.ofAuto());
        try {
            for (MlxArray a : arrays) {
                lib.check("mlx_vector_array_append_value", c.mlx_vector_array_append_value(v, a.handle()));
            }
            return f.apply(v);
        } finally {
            c.mlx_vector_array_free(v);
        }
    }

    /** {@code a} gathered at {@code indices} along {@code axis}. */
    public MlxArray take(MlxArray a, MlxArray indices, int axis) {
        int ax = axis("mlx_take_axis", a, axis);
        return op("mlx_take_axis", r -> c.mlx_take_axis(r, a.handle(), indices.handle(), ax, s()), a, indices);
    }

    // ---- reductions and fast kernels

    public MlxArray logsumexp(MlxArray a, int axis, boolean keepdims) {
        int ax = axis("mlx_logsumexp_axis", a, axis);
        return op("mlx_logsumexp_axis", r -> c.mlx_logsumexp_axis(r, a.handle(), ax, keepdims, s()), a);
    }

    public MlxArray argmax(MlxArray a, int axis, boolean keepdims) {
        int ax = axis("mlx_argmax_axis", a, axis);
        return op("mlx_argmax_axis", r -> c.mlx_argmax_axis(r, a.handle(), ax, keepdims, s()), a);
    }

    public MlxArray max(MlxArray a, int axis, boolean keepdims) {
        int ax = axis("mlx_max_axis", a, axis);
        return op("mlx_max_axis", r -> c.mlx_max_axis(r, a.handle(), ax, keepdims, s()), a);
    }

    public MlxArray sum(MlxArray a, int axis, boolean keepdims) {
        int ax = axis("mlx_sum_axis", a, axis);
        return op("mlx_sum_axis", r -> c.mlx_sum_axis(r, a.handle(), ax, keepdims, s()), a);
    }

    /**
     * The running sum along {@code axis}: inclusive ({@code out[i] = a[0] + … + a[i]}) or exclusive ({@code out[0] = 0},
     * {@code out[i] = out[i−1] + a[i−1]}), left to right on the CPU. MLX's CUDA scan adds partial sums in other orders
     * for neighbouring outputs, so there {@code out[i]} may differ from {@code out[i−1]} by an ulp, either way, even
     * where {@code a[i−1] = 0} (docs/mlx-upstream/cumsum-zero-steps.md).
     */
    public MlxArray cumsum(MlxArray a, int axis, boolean inclusive) {
        int ax = axis("mlx_cumsum", a, axis);
        return op("mlx_cumsum", r -> c.mlx_cumsum(r, a.handle(), ax, false, inclusive, s()), a);
    }

    /** The indices that sort {@code a} ascending along {@code axis}: stable (equal values by index), NaN last. */
    public MlxArray argsort(MlxArray a, int axis) {
        int ax = axis("mlx_argsort_axis", a, axis);
        return op("mlx_argsort_axis", r -> c.mlx_argsort_axis(r, a.handle(), ax, s()), a);
    }

    /** {@code a} gathered at {@code indices} (same rank, broadcasting) along {@code axis}. */
    public MlxArray takeAlong(MlxArray a, MlxArray indices, int axis) {
        int ax = axis("mlx_take_along_axis", a, axis);
        if (indices.rank() != a.rank()) {
            throw MtpException.invalidArgument("mlx_take_along_axis: indices rank " + indices.rank()
                    + " differs from array rank " + a.rank());
        }
        return op("mlx_take_along_axis", r -> c.mlx_take_along_axis(r, a.handle(), indices.handle(), ax, s()),
                a, indices);
    }

    // ---- random

    /**
     * {@code mx.random.uniform(shape, float32, key)}: {@code min(f32(bits) / f32(2^32 − 1), nextafter(1, 0))} on
     * {@code bits(key, size)} (conformance/SPEC.md, "Random stream" §4). {@code key} is one uint32 key of shape [2].
     */
    public MlxArray uniform(MlxArray key, int... shape) {
        if (key.dtype() != MlxC.MLX_UINT32 || !Arrays.equals(key.shape(), new int[] {2})) {
            throw MtpException.invalidArgument("mlx_random_uniform: key must be uint32 of shape [2], got dtype "
                    + key.dtype() + " shape " + Arrays.toString(key.shape()));
        }
        for (int d : shape) {
            if (d < 0) {
                throw MtpException.invalidArgument("mlx_random_uniform: negative dimension in "
                        + Arrays.toString(shape));
            }
        }
        MlxArray low = fromFloats(new float[] {0.0f});
        MlxArray high = fromFloats(new float[] {1.0f});
        return op("mlx_random_uniform", r -> c.mlx_random_uniform(r, low.handle(), high.handle(), ints(shape),
                shape.length, MlxC.MLX_FLOAT32, key.handle(), s()), key);
    }

    /** {@code x · (mean(x²) + ε)^-½ · w} over the last axis (MLX fast rms_norm, f32 inside). */
    public MlxArray rmsNorm(MlxArray x, MlxArray weight, float eps) {
        if (!(eps > 0) || !Float.isFinite(eps)) {
            throw MtpException.invalidArgument("mlx_fast_rms_norm: eps " + eps + " must be positive");
        }
        return op("mlx_fast_rms_norm", r -> c.mlx_fast_rms_norm(r, x.handle(), weight.handle(), eps, s()), x, weight);
    }

    /**
     * Scaled dot-product attention with a boolean mask {@code [B, 1, S, T]} (true = visible), or none (every key
     * visible to every query); GQA by head count.
     */
    public MlxArray attention(MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray mask) {
        return attention(q, k, v, scale, mask == null ? "" : "array", mask);
    }

    /**
     * Scaled dot-product attention where query {@code i} of {@code S} sees keys {@code j ≤ T − S + i} of {@code T}
     * (MLX's {@code "causal"} mode, aligned at the end); GQA by head count.
     */
    public MlxArray attentionCausal(MlxArray q, MlxArray k, MlxArray v, float scale) {
        if (q.dim(2) > k.dim(2)) {
            throw MtpException.invalidArgument("mlx_fast_scaled_dot_product_attention: causal with " + q.dim(2)
                    + " queries over " + k.dim(2) + " keys");
        }
        return attention(q, k, v, scale, "causal", null);
    }

    private MlxArray attention(MlxArray q, MlxArray k, MlxArray v, float scale, String maskMode, MlxArray mask) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment mode = a.allocateFrom(maskMode);
            return op("mlx_fast_scaled_dot_product_attention", r -> c.mlx_fast_scaled_dot_product_attention(r,
                    q.handle(), k.handle(), v.handle(), scale, mode, mask == null ? NULL_ARRAY : mask.handle(),
                    NULL_ARRAY, s()), q, k, v, mask);
        }
    }
}
