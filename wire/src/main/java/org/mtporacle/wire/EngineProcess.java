package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One engine child process speaking {@code mtp-oracle-wire/1} (WIRE.md §1, §3, §6): sends a request, waits at most the
 * per-call timeout for its reply. Every way the engine can fail — exit, hang, garbage, a reply that breaks the
 * protocol — becomes a BACKEND_FAILURE naming what happened and the last stderr lines; the process is killed then
 * and {@link #failure()} says why from then on. Not thread-safe: one request at a time.
 */
final class EngineProcess implements AutoCloseable {
    private static final int STDERR_LINES = 20;
    /** The most bytes of one stderr line kept (the rest is counted, not kept): 20 lines hold at most 80 KiB. */
    static final int STDERR_LINE_BYTES = 4096;
    /** The most characters of stderr lines a failure message quotes. */
    private static final int STDERR_MESSAGE_CHARS = 2000;
    /** How often a call waiting for a reply looks whether the engine is still alive. */
    private static final long POLL_NANOS = 100_000_000L;
    /** The most processes below the engine remembered for killing with it. */
    private static final int MAX_DESCENDANTS = 1024;
    private static final ScheduledExecutorService WATCHDOG = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "mtp-wire-watchdog");
        t.setDaemon(true);
        return t;
    });

    private final String label;
    private final Duration timeout;
    private final Process process;
    private final OutputStream stdin;
    private final BlockingQueue<Object> replies = new ArrayBlockingQueue<>(4);
    private final ArrayDeque<String> stderrTail = new ArrayDeque<>();
    private final Thread stdoutReader;
    private final Thread stderrReader;
    private final java.util.Set<ProcessHandle> descendants = new java.util.LinkedHashSet<>();
    private long nextId = 1;
    private String failure;
    private int openGroups;
    private boolean released;

    private record Ended(Throwable cause) {
    }

    private EngineProcess(String label, Duration timeout, Process process) {
        this.label = label;
        this.timeout = timeout;
        this.process = process;
        this.stdin = new BufferedOutputStream(process.getOutputStream(), 1 << 16);
        boolean forward = "1".equals(System.getenv("MTP_WIRE_LOG"));
        this.stderrReader = Thread.ofPlatform().daemon().name("mtp-wire-stderr").start(() -> {
            try (InputStream err = new BufferedInputStream(process.getErrorStream(), 1 << 16)) {
                for (String line; (line = boundedLine(err)) != null; ) {
                    synchronized (stderrTail) {
                        if (stderrTail.size() == STDERR_LINES) {
                            stderrTail.removeFirst();
                        }
                        stderrTail.addLast(line);
                    }
                    if (forward) {
                        System.err.println("[engine] " + UntrustedText.line(line));
                    }
                }
            } catch (IOException ignored) {
                // the process is gone; what was read is kept
            }
        });
        this.stdoutReader = Thread.ofPlatform().daemon().name("mtp-wire-stdout").start(() -> {
            BufferedInputStream in = new BufferedInputStream(process.getInputStream(), 1 << 16);
            try {
                for (WireFrame f; (f = WireFrame.read(in)) != null; ) {
                    replies.put(f);
                }
                replies.put(new Ended(null));
            } catch (IOException | RuntimeException e) {
                putQuietly(new Ended(e)); // whatever stops the reader ends the wait at once, never a timeout
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    private void putQuietly(Object o) {
        try {
            replies.put(o);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Starts {@code command}.
     *
     * @throws MtpException UNAVAILABLE when it cannot be started (no such program, not executable)
     */
    static EngineProcess start(String label, List<String> command, Duration timeout) {
        return start(label, command, timeout, null);
    }

    /** As {@link #start(String, List, Duration)}, in {@code directory} (null: this process's working directory). */
    static EngineProcess start(String label, List<String> command, Duration timeout, java.nio.file.Path directory) {
        try {
            Process p = new ProcessBuilder(command).directory(directory == null ? null : directory.toFile())
                    .redirectInput(ProcessBuilder.Redirect.PIPE).start();
            return new EngineProcess(label, timeout, p);
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, label + ": cannot start " + command + " ("
                    + e.getMessage() + ")");
        }
    }

    /** Null while the engine is healthy; otherwise what went wrong first. */
    String failure() {
        return failure;
    }

    boolean alive() {
        return failure == null && process.isAlive();
    }

    /**
     * Sends {@code op} and returns the reply frame's {@code result} and tensors, or throws the engine's error as an
     * {@link MtpException} of its kind; an engine failure throws BACKEND_FAILURE and kills the process.
     */
    WireFrame call(String op, ObjectNode args, List<HostTensor> tensors) {
        return call(op, args, tensors, timeout);
    }

    /** {@link #call} with the given timeout (hello and load: start-up and model loading, WIRE.md §6). */
    synchronized WireFrame call(String op, ObjectNode args, List<HostTensor> tensors, Duration timeout) {
        if (failure != null) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, label + ": " + op + ": the engine failed "
                    + "earlier and is gone (" + failure + ")");
        }
        for (int i = 0; i < tensors.size(); i++) {
            // the one check the runner makes itself: bytes it cannot read cannot be sent (WIRE.md §8)
            var data = tensors.get(i).data();
            if (!data.scope().isAlive() || !data.isAccessibleBy(Thread.currentThread())) {
                throw MtpException.invalidArgument(op + ": tensor " + i + " (" + tensors.get(i).describe()
                        + ") cannot be read here: its memory was released or is confined to another thread, so it "
                        + "cannot be sent to the engine");
            }
        }
        long id = nextId++;
        ObjectNode header = WireValues.NODES.objectNode();
        header.put("id", id);
        header.put("op", op);
        header.set("args", args);
        AtomicBoolean timedOut = new AtomicBoolean();
        ScheduledFuture<?> dog = WATCHDOG.schedule(() -> {
            timedOut.set(true);
            killTree();
        }, timeout.toNanos(), TimeUnit.NANOSECONDS);
        Object got;
        try {
            try {
                WireFrame.write(stdin, header, tensors);
            } catch (IOException e) {
                // the engine stopped reading (it exited or was killed); what it said on the way out decides below
            }
            got = awaitReply(System.nanoTime() + timeout.toNanos() + 50_000_000L, timedOut);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw fail(op, "interrupted while waiting for the reply");
        } finally {
            dog.cancel(false);
        }
        if (timedOut.get() || got == null) {
            throw fail(op, "no reply within " + seconds(timeout) + " (the per-call timeout; --timeout SECONDS "
                    + "changes it)");
        }
        if (got instanceof Ended end) {
            if (end.cause() instanceof WireFrame.FramingException fe) {
                // text where a header belongs is a stray print; a header that parsed but describes its tensors
                // wrongly (dtype, shape, nbytes, references) is the engine's framing, not its logging
                boolean stray = fe.getMessage().startsWith("not a frame header");
                throw fail(op, stray ? "the engine wrote something that is not a frame on stdout: " + fe.getMessage()
                        + " (stdout carries only frames; log to stderr, WIRE.md §1)" : "the engine's reply frame is "
                        + "malformed: " + fe.getMessage() + " (WIRE.md §2.1)");
            }
            throw fail(op, "the engine " + exitDescription() + (end.cause() == null ? ""
                    : " (" + end.cause().getMessage() + ")"));
        }
        WireFrame reply = (WireFrame) got;
        ObjectNode h = reply.header();
        JsonNode rid = h.get("id");
        if (rid == null || !rid.isIntegralNumber() || !rid.canConvertToLong() || rid.asLong() != id) {
            throw fail(op, "reply id " + UntrustedText.clip(String.valueOf(rid)) + ", expected " + id
                    + " (WIRE.md §3)");
        }
        JsonNode ok = h.get("ok");
        if (ok == null || !ok.isBoolean()) {
            throw fail(op, "reply field ok is " + ok + ", expected true or false (WIRE.md §3)");
        }
        if (!ok.asBoolean()) {
            throw engineError(op, h.get("error"));
        }
        JsonNode result = h.get("result");
        if (result == null || !result.isObject()) {
            throw fail(op, "reply result is " + result + ", expected an object (WIRE.md §3)");
        }
        return reply;
    }

    /**
     * The next reply, polled in short slices: the engine's descendants are remembered while it lives, and an engine
     * that exited is reported at once, even when a process it started still holds its stdout open.
     */
    private Object awaitReply(long deadline, AtomicBoolean timedOut) throws InterruptedException {
        while (true) {
            Object got = replies.poll(POLL_NANOS, TimeUnit.NANOSECONDS);
            if (got != null || timedOut.get()) {
                return got;
            }
            if (!process.isAlive()) {
                got = replies.poll(POLL_NANOS, TimeUnit.NANOSECONDS); // a last reply may still be in the pipe
                return got != null ? got : new Ended(null);
            }
            rememberDescendants();
            if (System.nanoTime() - deadline > 0) {
                return null;
            }
        }
    }

    private void rememberDescendants() {
        synchronized (descendants) {
            process.descendants().limit(MAX_DESCENDANTS).forEach(h -> {
                if (descendants.size() < MAX_DESCENDANTS) {
                    descendants.add(h);
                }
            });
        }
    }

    /** Kills the engine and every process it started that is still known (a handle checks its start time). */
    private void killTree() {
        if (process.isAlive()) {
            rememberDescendants();
        }
        synchronized (descendants) {
            descendants.forEach(ProcessHandle::destroyForcibly);
        }
        process.destroyForcibly();
    }

    /**
     * One line of {@code in} without its end, at most {@link #STDERR_LINE_BYTES} bytes of it kept (the cut said), or
     * null at the end of the stream.
     */
    static String boundedLine(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream kept = new java.io.ByteArrayOutputStream(128);
        long dropped = 0;
        int b = in.read();
        if (b < 0) {
            return null;
        }
        while (b >= 0 && b != '\n') {
            if (kept.size() < STDERR_LINE_BYTES) {
                kept.write(b);
            } else {
                dropped++;
            }
            b = in.read();
        }
        String line = kept.toString(StandardCharsets.UTF_8);
        if (line.endsWith("\r")) {
            line = line.substring(0, line.length() - 1);
        }
        return dropped == 0 ? line : line + "… (line cut, " + dropped + " more bytes)";
    }

    private MtpException engineError(String op, JsonNode error) {
        if (error == null || !error.isObject()) {
            return fail(op, "failure reply without an error object (WIRE.md §3): " + error);
        }
        JsonNode kind = error.get("kind");
        MtpException.Kind k = null;
        if (kind != null && kind.isTextual()) {
            for (MtpException.Kind c : MtpException.Kind.values()) {
                if (c.name().equals(kind.asText())) {
                    k = c;
                }
            }
        }
        if (k == null) {
            return fail(op, "error kind " + kind + " is not one of the seven MtpException kinds (WIRE.md §6)");
        }
        JsonNode message = error.get("message");
        String m = message != null && message.isTextual() ? message.asText() : op + ": (the engine gave no message)";
        return new MtpException(k, m);
    }

    /** Records a protocol violation of the engine in a reply (missing field, wrong type) and kills the process. */
    MtpException violation(String op, String what) {
        return fail(op, what);
    }

    private MtpException fail(String op, String what) {
        String message = label + ": " + op + ": " + what + lastStderr();
        if (failure == null) {
            failure = op + ": " + what;
        }
        killTree();
        return new MtpException(MtpException.Kind.BACKEND_FAILURE, message);
    }

    private String exitDescription() {
        try {
            if (process.waitFor(2, TimeUnit.SECONDS)) {
                return "exited with status " + process.exitValue() + " instead of replying";
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "closed its stdout instead of replying";
    }

    /** {@code "; last stderr lines: a | b"}, or empty when the engine wrote none. */
    String lastStderr() {
        try {
            stderrReader.join(process.isAlive() ? 50 : 500);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (stderrTail) {
            if (stderrTail.isEmpty()) {
                return "; the engine wrote nothing on stderr";
            }
            // each line clipped, the newest first to be kept, so the message stays far inside its own bound
            ArrayDeque<String> shown = new ArrayDeque<>();
            int chars = 0;
            for (var it = stderrTail.descendingIterator(); it.hasNext(); ) {
                String l = UntrustedText.clip(it.next());
                if (chars + l.length() > STDERR_MESSAGE_CHARS) {
                    break;
                }
                shown.addFirst(l);
                chars += l.length() + 3;
            }
            int left = stderrTail.size() - shown.size();
            return "; last stderr lines: " + (left == 0 ? "" : "(" + left + " earlier left out) ")
                    + String.join(" | ", shown);
        }
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /** A group was opened on this process: it stays up until the group is closed, even after {@link #release}. */
    synchronized void groupOpened() {
        openGroups++;
    }

    /** A group of this process was closed; the process ends when it was released and this was the last group. */
    synchronized void groupClosed() {
        openGroups--;
        if (released && openGroups <= 0) {
            close();
        }
    }

    /** Its model is closed: the process ends now, or when its last open group is closed (spec §11.11). */
    synchronized void release() {
        released = true;
        if (openGroups <= 0) {
            close();
        }
    }

    /** Asks the engine to exit ({@code shutdown}, then end of stdin); kills it when it does not within 2 s. */
    @Override
    public synchronized void close() {
        if (failure == null && process.isAlive()) {
            try {
                call("shutdown", WireValues.NODES.objectNode(), List.of());
            } catch (MtpException ignored) {
                // an engine that cannot shut down cleanly is killed below
            }
        }
        try {
            stdin.close();
        } catch (IOException ignored) {
            // already gone
        }
        try {
            if (!process.waitFor(2, TimeUnit.SECONDS)) {
                killTree();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            killTree();
        }
        synchronized (descendants) {
            descendants.forEach(ProcessHandle::destroyForcibly); // what the engine left behind ends with it
        }
        if (failure == null) {
            failure = "closed";
        }
        stdoutReader.interrupt();
    }
}
