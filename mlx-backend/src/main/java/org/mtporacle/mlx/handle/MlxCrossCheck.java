package org.mtporacle.mlx.handle;

import org.mtporacle.mlx.ffi.MlxC;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * With {@code MTP_MLX_CROSSCHECK=DIR}: every op built on the GPU is built a second time on MLX's CPU stream over the
 * same input arrays (its twin). Once an evaluation has computed the GPU result, the twin runs and the two results are
 * compared, so an op is judged on the very inputs the GPU saw and only the op that goes wrong is reported, not what
 * it feeds. Each op that differs beyond rounding is printed to standard error with its inputs' shapes, dtypes and
 * strides; the first {@link #DUMPS} of them have their inputs and both results written to {@code DIR} as {@code .npy}
 * files and described in {@code DIR/ops.txt}. A table of ops checked and differing per name is printed at exit.
 *
 * <p>The GPU graph runs as it would without the check: the same evaluations, the same arrays alive (the twins only
 * add consumers outside it). For {@code compile=off}; traced ops are not checked. Off, it costs one branch per op.
 */
final class MlxCrossCheck {
    static final String DIR = System.getenv("MTP_MLX_CROSSCHECK");
    static final boolean ON = DIR != null && !DIR.isBlank();
    /** With {@code MTP_MLX_CROSSCHECK_CPU=1} ops on a CPU stream are checked too (against themselves: a self-test). */
    static final boolean ALSO_CPU = "1".equals(System.getenv("MTP_MLX_CROSSCHECK_CPU"));
    /** Ops whose inputs and results are written to DIR. */
    static final int DUMPS = 40;
    /** Differing ops printed in full (all are counted). */
    static final int PRINTS = 200;
    // f32 ops on identical inputs differ by accumulation order only (1e-6 relative); bf16/f16 by one rounding (2^-8)
    private static final double REL_F32 = 1e-3;
    private static final double REL_HALF = 1.6e-2;

    private record Pending(long seq, String name, MlxArray out, MlxArray twin, MlxArray[] in) {
    }

    private static final List<Pending> PENDING = new ArrayList<>(); // MLX thread only
    private static final Map<String, long[]> BY_OP = new TreeMap<>(); // name → {checked, differing, no twin}
    private static MlxStream cpu;
    private static long seq;
    private static long evals;
    private static int printed;
    private static int dumped;
    private static boolean busy;

    static {
        if (ON) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.print(table()), "mlx-crosscheck"));
        }
    }

    /** Ops (by number) whose inputs and results are written to DIR whether or not they differ: "FIRST-LAST". */
    private static final long[] DUMP_RANGE = range(System.getenv("MTP_MLX_CROSSCHECK_DUMP"));
    /** Inputs larger than this are described, not written. */
    private static final long DUMP_MAX_ELEMENTS = 1 << 16;
    /** Content hashes of uploads and of checked results: an MLX array never changes once computed. */
    private static final Map<MlxArray, long[]> HASHES = new java.util.IdentityHashMap<>();
    private static long changed;

    private MlxCrossCheck() {
    }

    private static long[] range(String v) {
        if (v == null || !v.matches("\\d+-\\d+")) {
            return new long[] {1, 0};
        }
        String[] p = v.split("-");
        return new long[] {Long.parseLong(p[0]), Long.parseLong(p[1])};
    }

    /** Hashes an upload's content as the device holds it, to see later whether anything overwrote it. */
    static void uploaded(MlxOps ops, MlxArray a) {
        if (busy) {
            return;
        }
        busy = true;
        try {
            if (cpu == null) {
                cpu = MlxStream.open(ops.library(), false);
            }
            HASHES.put(a, new long[] {hash(ops.readThrough(a, cpu)), -(++uploads)});
        } finally {
            busy = false;
        }
    }

    private static long uploads;

    /** Reports {@code a} when its content differs from the hash taken when it was computed or uploaded. */
    private static void verify(MlxOps ops, MlxArray a, String when) {
        long[] h = a == null ? null : HASHES.get(a);
        if (h == null) {
            return;
        }
        if (a.isFreed()) {
            HASHES.remove(a);
            return;
        }
        long now = hash(ops.readThrough(a, cpu));
        if (now != h[0]) {
            changed++;
            h[0] = now;
            System.err.println("mlx crosscheck: " + (h[1] < 0 ? "upload #" + -h[1] : "result of op #" + h[1]) + " "
                    + describe(a) + " changed after it was computed, seen " + when);
        }
    }

    private static long hash(Object values) {
        long h = 0xcbf29ce484222325L;
        if (values instanceof float[] f) {
            for (float v : f) {
                h = (h ^ Float.floatToRawIntBits(v)) * 0x100000001b3L;
            }
        } else {
            for (int v : (int[]) values) {
                h = (h ^ v) * 0x100000001b3L;
            }
        }
        return h;
    }

    /** Builds {@code out}'s twin on the CPU and keeps both until an evaluation has computed {@code out}. */
    static void record(MlxOps ops, String name, MlxOps.Call call, MlxArray out, MlxArray[] in) {
        if (cpu == null) {
            cpu = MlxStream.open(ops.library(), false);
        }
        MlxArray twin = ops.twin(call, cpu);
        seq++;
        busy = true;
        try {
            HASHES.keySet().removeIf(MlxArray::isFreed);
            for (MlxArray a : in) {
                if (a != null && HASHES.containsKey(a) && ops.isAvailable(a)) {
                    verify(ops, a, "when op #" + seq + " " + name + " was built");
                }
            }
        } finally {
            busy = false;
        }
        if (twin == null) {
            count(name)[2]++;
            return;
        }
        PENDING.add(new Pending(seq, name, out, twin, in.clone()));
    }

    /** Checks every pending op whose GPU result is now computed; drops those whose arrays were freed. */
    static void afterEval(MlxOps ops) {
        if (busy) {
            return;
        }
        busy = true;
        evals++;
        try {
            List<Pending> ready = new ArrayList<>();
            for (Iterator<Pending> it = PENDING.iterator(); it.hasNext(); ) {
                Pending p = it.next();
                if (p.out.isFreed() || Arrays.stream(p.in).anyMatch(a -> a != null && a.isFreed())) {
                    count(p.name)[3]++;
                    p.twin.close();
                    it.remove();
                } else if (ops.isAvailable(p.out)) {
                    ready.add(p);
                    it.remove();
                }
            }
            for (Pending p : ready) {
                try {
                    check(ops, p);
                } catch (RuntimeException e) {
                    count(p.name)[2]++;
                    System.err.println("mlx crosscheck: op #" + p.seq + " " + p.name + " not checked: "
                            + e.getMessage());
                } finally {
                    p.twin.close();
                }
            }
        } finally {
            busy = false;
        }
    }

    private static void check(MlxOps ops, Pending p) {
        for (MlxArray a : p.in) {
            verify(ops, a, "when op #" + p.seq + " " + p.name + " was checked");
        }
        Object g = ops.readThrough(p.out, cpu);
        Object c = ops.readThrough(p.twin, cpu);
        HASHES.put(p.out, new long[] {hash(g), p.seq});
        long[] n = count(p.name);
        n[0]++;
        int dt = p.out.dtype();
        String diff = g instanceof float[] gf
                ? floatDiff(gf, (float[]) c, p.out.shape(), dt == MlxC.MLX_FLOAT32 ? REL_F32 : REL_HALF)
                : intDiff((int[]) g, (int[]) c, p.out.shape());
        boolean inRange = p.seq >= DUMP_RANGE[0] && p.seq <= DUMP_RANGE[1];
        if (diff == null && !inRange) {
            return;
        }
        String line = "op #" + p.seq + " (eval " + evals + ") " + p.name + " -> " + describe(p.out) + ": "
                + (diff == null ? "same" : diff) + "; inputs "
                + String.join(", ", Arrays.stream(p.in).map(MlxCrossCheck::describe).toList());
        if (diff != null) {
            n[1]++;
            if (printed++ < PRINTS) {
                System.err.println("mlx crosscheck: " + line);
            }
        }
        if (inRange || dumped < DUMPS) {
            dumped += inRange ? 0 : 1;
            dump(ops, p, g, c, line);
        }
    }

    private static String floatDiff(float[] g, float[] c, int[] shape, double rel) {
        double scale = 0;
        for (float v : c) {
            if (Float.isFinite(v)) {
                scale = Math.max(scale, Math.abs(v));
            }
        }
        int bad = 0;
        int first = -1;
        int worst = -1;
        double max = 0;
        for (int i = 0; i < g.length; i++) {
            boolean same = Float.compare(g[i], c[i]) == 0 || g[i] == c[i];
            double d = Math.abs((double) g[i] - c[i]);
            if (!same && !(d <= rel * Math.abs(c[i]) + rel * 0.1 * scale)) {
                bad++;
                first = first < 0 ? i : first;
                if (worst < 0 || !(d <= max)) {
                    max = d;
                    worst = i;
                }
            }
        }
        if (bad == 0) {
            return null;
        }
        return String.format(Locale.ROOT, "%d of %d differ, max |gpu - cpu| %.6g at %s (gpu %.9g, cpu %.9g), "
                        + "first at %s (gpu %.9g, cpu %.9g), cpu max |x| %.6g", bad, g.length, max,
                Arrays.toString(index(worst, shape)), g[worst], c[worst], Arrays.toString(index(first, shape)),
                g[first], c[first], scale);
    }

    private static String intDiff(int[] g, int[] c, int[] shape) {
        int bad = 0;
        int first = -1;
        for (int i = 0; i < g.length; i++) {
            if (g[i] != c[i]) {
                bad++;
                first = first < 0 ? i : first;
            }
        }
        return bad == 0 ? null : bad + " of " + g.length + " differ, first at " + Arrays.toString(index(first, shape))
                + " (gpu " + g[first] + ", cpu " + c[first] + ")";
    }

    private static int[] index(int flat, int[] shape) {
        int[] at = new int[shape.length];
        for (int d = shape.length - 1; d >= 0; d--) {
            at[d] = shape[d] == 0 ? 0 : flat % shape[d];
            flat = shape[d] == 0 ? 0 : flat / shape[d];
        }
        return at;
    }

    private static String describe(MlxArray a) {
        if (a == null) {
            return "none";
        }
        return dtypeName(a.dtype()) + Arrays.toString(a.shape()) + " strides " + Arrays.toString(a.strides());
    }

    private static long elements(MlxArray a) {
        long n = 1;
        for (int d : a.shape()) {
            n *= d;
        }
        return n;
    }

    private static String dtypeName(int dt) {
        return switch (dt) {
            case MlxC.MLX_BOOL -> "bool";
            case MlxC.MLX_UINT32 -> "u32";
            case MlxC.MLX_INT32 -> "i32";
            case MlxC.MLX_FLOAT16 -> "f16";
            case MlxC.MLX_FLOAT32 -> "f32";
            case MlxC.MLX_BFLOAT16 -> "bf16";
            default -> "dtype" + dt;
        };
    }

    private static long[] count(String name) {
        return BY_OP.computeIfAbsent(name, k -> new long[4]);
    }

    /** Writes {@code opSEQ-in0.npy …, -gpu.npy, -cpu.npy} (logical layout; strides in ops.txt) under DIR. */
    private static void dump(MlxOps ops, Pending p, Object g, Object c, String line) {
        try {
            Path dir = Path.of(DIR);
            Files.createDirectories(dir);
            String stem = "op" + p.seq;
            for (int i = 0; i < p.in.length; i++) {
                if (p.in[i] != null && elements(p.in[i]) <= DUMP_MAX_ELEMENTS) {
                    npy(dir.resolve(stem + "-in" + i + ".npy"), ops.readThrough(p.in[i], cpu), p.in[i].shape());
                }
            }
            npy(dir.resolve(stem + "-gpu.npy"), g, p.out.shape());
            npy(dir.resolve(stem + "-cpu.npy"), c, p.out.shape());
            Files.writeString(dir.resolve("ops.txt"), line + System.lineSeparator(), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** NumPy's .npy format 1.0: f4 for floats, i4 for ints, C order. */
    private static void npy(Path file, Object values, int[] shape) throws IOException {
        boolean floats = values instanceof float[];
        int n = floats ? ((float[]) values).length : ((int[]) values).length;
        StringBuilder dims = new StringBuilder();
        for (int d : shape) {
            dims.append(d).append(", ");
        }
        String header = "{'descr': '<" + (floats ? "f4" : "i4") + "', 'fortran_order': False, 'shape': ("
                + (shape.length == 1 ? shape[0] + "," : dims.length() == 0 ? "" : dims.substring(0, dims.length() - 2))
                + "), }";
        int pad = 64 - (10 + header.length() + 1) % 64;
        header = header + " ".repeat(pad % 64) + "\n";
        ByteBuffer b = ByteBuffer.allocate(10 + header.length() + 4 * n).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        b.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
        for (int i = 0; i < n; i++) {
            if (floats) {
                b.putFloat(((float[]) values)[i]);
            } else {
                b.putInt(((int[]) values)[i]);
            }
        }
        Files.write(file, b.array());
    }

    /** The summary printed at exit: per op, how many were checked, differed, or had no CPU twin. */
    static String table() {
        StringBuilder sb = new StringBuilder("mlx crosscheck (MTP_MLX_CROSSCHECK): " + seq + " ops, " + evals
                + " evaluations, " + uploads + " uploads, " + changed + " arrays changed after they were computed\n");
        sb.append(String.format(Locale.ROOT, "  %-40s %10s %10s %10s %10s%n", "op", "checked", "differ", "no twin",
                "freed"));
        for (Map.Entry<String, long[]> e : BY_OP.entrySet()) {
            long[] v = e.getValue();
            sb.append(String.format(Locale.ROOT, "  %-40s %10d %10d %10d %10d%n", e.getKey(), v[0], v[1], v[2], v[3]));
        }
        return sb.toString();
    }
}

