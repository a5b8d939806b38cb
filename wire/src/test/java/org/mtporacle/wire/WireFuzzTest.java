package org.mtporacle.wire;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.io.fuzz.FuzzProperty;
import org.mtporacle.reference.ReferenceBackend;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Fuzz targets for the wire in both directions, with the property of {@link FuzzProperty} (only a clean refusal
 * escapes; allocation within {@code max(64 × input, 8 MiB)}): {@link #replies} reads an engine's stdout as the runner
 * does (frames, then each handshake result), {@link #requests} feeds {@code mtp serve-wire} (the reference behind it)
 * a request stream, which must answer every request without an internal failure. A normal run replays
 * {@code src/test/resources/org/mtporacle/wire/WireFuzzTestInputs/}.
 */
class WireFuzzTest {
    private static final MtpModel TINY = FixtureRecipe.named("tiny").load(TestEngines.fixtureCache());

    @FuzzTest(maxDuration = "60s")
    void replies(byte[] input) {
        FuzzProperty.check("replies", input.length, () -> {
            ByteArrayInputStream in = new ByteArrayInputStream(input);
            try {
                for (WireFrame f; (f = WireFrame.read(in)) != null; ) {
                    if (f.header().get("result") instanceof ObjectNode result) {
                        Hello.parse(result);
                    }
                }
            } catch (IOException e) {
                // a framing error, a short payload or a bad handshake: the runner fails the call with it
            }
        });
    }

    /**
     * Bytes {@code mtp serve-wire} may allocate per request it answers, beyond the bound of {@link FuzzProperty}: a
     * request stream's work grows with its requests, each a parse, a call and a reply (measured: 5–11 KiB for a
     * malformed request or a handshake, under a test runner's stack). A reply that allocated 64 KiB whatever its
     * size (the campaign's one finding, {@code crash-tiny-requests}) exceeds it.
     */
    static final long PER_REQUEST_BYTES = 16 << 10;

    @FuzzTest(maxDuration = "60s")
    void requests(byte[] input) {
        long[] replies = new long[1];
        FuzzProperty.check("requests", input.length, () -> replies[0] * PER_REQUEST_BYTES, () -> {
            replies[0] = 0;
            ByteArrayOutputStream log = new ByteArrayOutputStream();
            java.io.OutputStream counted = new java.io.OutputStream() {
                @Override
                public void write(int b) {
                }

                @Override
                public void write(byte[] b, int off, int len) {
                }

                @Override
                public void flush() {
                    replies[0]++; // WireFrame.write flushes once per frame
                }
            };
            try {
                new WireServer(new ReferenceBackend(), p -> TINY, new PrintStream(log, true, StandardCharsets.UTF_8))
                        .serve(new ByteArrayInputStream(input), counted);
            } catch (IOException e) {
                // a request stream that is not frames ends the session
            }
            String l = log.toString(StandardCharsets.UTF_8);
            if (l.contains("\tat ")) {
                throw new AssertionError("serve-wire failed internally on a request: " + l.lines().limit(4).toList());
            }
        });
    }

    /**
     * A backend name as a trace or a command line gives it ({@code exec:} naming and replay's lookup): splitting and
     * looking it up refuses cleanly, and neither starts a process (an engine starts only when it is probed or loaded).
     */
    @FuzzTest(maxDuration = "60s")
    void backendNames(byte[] input) {
        String name = new String(input, StandardCharsets.UTF_8);
        long before = ProcessHandle.current().children().count();
        FuzzProperty.check("backendNames", input.length, () -> {
            try {
                CommandWords.split(name);
            } catch (org.mtporacle.api.MtpException e) {
                // an empty command or an unclosed quote
            }
            try {
                org.mtporacle.conformance.BackendSelection.byName(name).name();
            } catch (org.mtporacle.api.MtpException e) {
                // no such backend, or an exec: name that does not split
            }
        });
        if (ProcessHandle.current().children().count() > before) {
            throw new AssertionError("looking up " + org.mtporacle.api.UntrustedText.quote(name) + " started a process");
        }
    }
}
