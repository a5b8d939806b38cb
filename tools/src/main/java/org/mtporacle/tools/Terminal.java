package org.mtporacle.tools;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.Optional;

/**
 * Whether standard error is a terminal and how wide it is, asked of the C library ({@code isatty(2)},
 * {@code ioctl(2, TIOCGWINSZ)}) because Java only answers for standard input and output together. Where the calls
 * are not found (not a POSIX C library) standard error counts as not a terminal.
 */
final class Terminal {
    private static final int STDOUT = 1;
    private static final int STDERR = 2;
    private static final MethodHandle ISATTY;
    private static final MethodHandle IOCTL;
    private static final MethodHandle DUP2;
    private static final long TIOCGWINSZ;

    static {
        MethodHandle isatty = null;
        MethodHandle ioctl = null;
        MethodHandle dup2 = null;
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        TIOCGWINSZ = os.contains("mac") || os.contains("darwin") ? 0x40087468L : 0x5413L;
        try {
            Linker linker = Linker.nativeLinker();
            Optional<MemorySegment> f = linker.defaultLookup().find("isatty");
            Optional<MemorySegment> g = linker.defaultLookup().find("ioctl");
            if (f.isPresent() && g.isPresent() && !os.contains("win")) {
                isatty = linker.downcallHandle(f.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT));
                ioctl = linker.downcallHandle(g.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
                        Linker.Option.firstVariadicArg(2));
                Optional<MemorySegment> d = linker.defaultLookup().find("dup2");
                if (d.isPresent()) {
                    dup2 = linker.downcallHandle(d.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                }
            }
        } catch (RuntimeException e) {
            isatty = null; // no native access: treated as no terminal
            ioctl = null;
            dup2 = null;
        }
        ISATTY = isatty;
        IOCTL = ioctl;
        DUP2 = dup2;
    }

    private Terminal() {
    }

    /**
     * Puts the launcher's standard error back on file descriptor 2. The {@code mtp} script starts the JVM with its
     * standard error through a filter that drops the JDK's "Using incubator modules" warning, printed while the JVM
     * boots, and the real one on the descriptor named by {@code MTP_STDERR_FD}; once running, standard error is the
     * real one again (a terminal stays a terminal for the progress line, and nothing is reordered). Does nothing
     * without that variable or where {@code dup2} is not found.
     */
    static void restoreStderr(String fdVariable) {
        if (fdVariable == null || DUP2 == null) {
            return;
        }
        try {
            int fd = Integer.parseInt(fdVariable.trim());
            if (fd > STDERR) {
                System.err.flush();
                int ignored = (int) DUP2.invokeExact(fd, STDERR);
            }
        } catch (Throwable t) {
            // keep the filtered standard error: every line still arrives
        }
    }

    /** True when standard error is a terminal. */
    static boolean stderrIsTerminal() {
        return isatty(STDERR);
    }

    /**
     * Whether to colour what goes to standard output ({@code FAILED} in red, as pytest and test-backend-ops do): only
     * when it is a terminal, and never when {@code NO_COLOR} is set to anything non-empty (no-color.org).
     */
    static boolean colour() {
        return colour(System.getenv("NO_COLOR"), isatty(STDOUT));
    }

    static boolean colour(String noColor, boolean stdoutIsTerminal) {
        return stdoutIsTerminal && (noColor == null || noColor.isEmpty());
    }

    private static boolean isatty(int fd) {
        if (ISATTY == null) {
            return false;
        }
        try {
            return (int) ISATTY.invokeExact(fd) == 1;
        } catch (Throwable t) {
            return false;
        }
    }

    /** The width of the terminal on standard error in columns; else {@code COLUMNS}, else 80. */
    static int columns() {
        if (IOCTL != null) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment ws = a.allocate(8); // struct winsize { unsigned short row, col, xpixel, ypixel; }
                if ((int) IOCTL.invokeExact(STDERR, TIOCGWINSZ, ws) == 0) {
                    int cols = Short.toUnsignedInt(ws.get(ValueLayout.JAVA_SHORT, 2));
                    if (cols > 0) {
                        return cols;
                    }
                }
            } catch (Throwable t) {
                // fall through to COLUMNS
            }
        }
        try {
            int c = Integer.parseInt(System.getenv().getOrDefault("COLUMNS", "80").trim());
            return c > 0 ? c : 80;
        } catch (NumberFormatException e) {
            return 80;
        }
    }
}
