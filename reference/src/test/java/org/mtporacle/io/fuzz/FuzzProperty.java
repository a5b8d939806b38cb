package org.mtporacle.io.fuzz;

import org.mtporacle.api.MtpException;

import java.lang.management.ManagementFactory;

/**
 * The property every parser of untrusted files must hold, for every input: only {@link MtpException} escapes (never a
 * JDK exception such as NullPointerException, ArrayIndexOutOfBoundsException or OutOfMemoryError), and the heap
 * allocated by the parse on this thread stays under {@code max(inputBytes × ALLOCATION_FACTOR, ALLOCATION_SLACK)}.
 * A violation is thrown as {@link AssertionError}, which Jazzer records as a finding and JUnit as a failure.
 *
 * <p>The allocation probe is {@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes} on the current thread
 * (the parsers are single-threaded). The factor covers JSON trees (Jackson node objects are a few dozen times the
 * size of the text they came from); the slack covers class loading and first-use initialisation. An allocation driven
 * by a size the file <em>claims</em> (a header length, a tensor shape, a count) exceeds both by orders of magnitude.
 */
public final class FuzzProperty {
    /** Bytes a parse may allocate per byte of input. */
    public static final long ALLOCATION_FACTOR = 64;
    /** Bytes any parse may allocate regardless of its input's size. */
    public static final long ALLOCATION_SLACK = 8L << 20;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** A parse of one input; it may throw anything, the property decides what is allowed. */
    @FunctionalInterface
    public interface Parse {
        void run() throws Exception;
    }

    private FuzzProperty() {
    }

    /**
     * Runs {@code parse} and checks the property.
     *
     * @param what       the target, for the message
     * @param inputBytes the size of the untrusted input (all files the parse reads)
     * @return the bytes the parse allocated (the second measurement when the first exceeded the bound)
     * @throws AssertionError when anything but MtpException escapes or the allocation exceeds the bound
     */
    public static long check(String what, long inputBytes, Parse parse) {
        return check(what, inputBytes, () -> 0, parse);
    }

    /**
     * Runs {@code parse} and checks the property with {@code allowance} more bytes of bound, for a target whose work
     * is a stream of requests, each answered ({@code mtp serve-wire}): the allowance is a stated number of bytes per
     * request answered, read after the parse (the first measurement's count when it is measured twice).
     *
     * @param allowance bytes added to the bound, read after the parse
     */
    public static long check(String what, long inputBytes, java.util.function.LongSupplier allowance, Parse parse) {
        long used = measure(what, inputBytes, parse);
        long bound = bound(inputBytes) + allowance.getAsLong();
        if (used > bound) {
            // The first parse to reach a class pays for loading it (and, under Jazzer, for instrumenting it): measure
            // again with every class loaded. An allocation driven by the input exceeds the bound both times.
            used = measure(what, inputBytes, parse);
        }
        if (Boolean.getBoolean("fuzz.verbose")) {
            System.out.printf("[fuzz] %s: %d input bytes, %d allocated (%.1f×)%n", what, inputBytes, used,
                    used / (double) Math.max(1, inputBytes));
        }
        if (used > bound) {
            throw new AssertionError(what + ": allocated " + used + " bytes on an input of " + inputBytes
                    + " bytes, more than the bound " + bound + " = max(" + ALLOCATION_FACTOR + " × input, "
                    + ALLOCATION_SLACK + ")" + (bound > bound(inputBytes) ? " + " + (bound - bound(inputBytes))
                    + " allowed for the requests answered" : ""));
        }
        return used;
    }

    private static long measure(String what, long inputBytes, Parse parse) {
        long tid = Thread.currentThread().threadId();
        long before = THREADS.getThreadAllocatedBytes(tid);
        try {
            parse.run();
        } catch (MtpException expected) {
            // the one allowed outcome besides success
        } catch (OutOfMemoryError | StackOverflowError e) {
            throw new AssertionError(what + ": " + e + " on an input of " + inputBytes + " bytes", e);
        } catch (Exception | Error e) {
            throw new AssertionError(what + ": only MtpException may escape, got " + e, e);
        }
        return THREADS.getThreadAllocatedBytes(tid) - before;
    }

    /** {@code max(inputBytes × ALLOCATION_FACTOR, ALLOCATION_SLACK)}. */
    public static long bound(long inputBytes) {
        return Math.max(Math.multiplyHigh(inputBytes, ALLOCATION_FACTOR) != 0 ? Long.MAX_VALUE
                : inputBytes * ALLOCATION_FACTOR, ALLOCATION_SLACK);
    }

    /** A committed corpus folder holds at least one {@code seed-*} input and stays under 1 MiB in all. */
    public static void assertSeededAndSmall(java.nio.file.Path folder) throws java.io.IOException {
        try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.list(folder)) {
            java.util.List<java.nio.file.Path> files = s.toList();
            org.assertj.core.api.Assertions.assertThat(files)
                    .anyMatch(p -> p.getFileName().toString().startsWith("seed-"));
            long total = 0;
            for (java.nio.file.Path f : files) {
                total += java.nio.file.Files.size(f);
            }
            org.assertj.core.api.Assertions.assertThat(total).as("bytes in %s", folder).isLessThan(1L << 20);
        }
    }
}
