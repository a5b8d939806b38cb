package org.mtporacle.wire;

import org.mtporacle.api.Availability;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.reference.ReferenceBackend;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A test engine: the reference behind the wire that misbehaves once, at its first {@code prefill}, in the way
 * {@code MODE} names — {@code crash} (exits 7), {@code hang} (sleeps), {@code garbage} (writes text to stdout) — unless
 * the marker file exists (it creates it), so the next process behaves (the marker {@code always}: every time); {@code lenient} accepts every prefill and
 * commit without looking at the arguments; {@code wrong-protocol} answers the handshake with another version.
 */
public final class MisbehavingWireMain {
    private static PrintStream frames;
    private static String mode;
    private static Path marker;

    private MisbehavingWireMain() {
    }

    public static void main(String[] args) throws Exception {
        mode = args[0];
        marker = args.length > 1 ? Path.of(args[1]) : null;
        frames = new PrintStream(new FileOutputStream(FileDescriptor.out), false);
        System.setOut(System.err);
        System.err.println("fake engine: mode " + mode + " starting");
        if (mode.equals("wrong-protocol")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            in.readLine();
            frames.print("{\"id\":1,\"ok\":true,\"result\":{\"protocol\":\"mtp-oracle-wire/9\",\"engine\":{\"name\":"
                    + "\"future\",\"version\":\"9\"},\"profiles\":[],\"capabilities\":{}}}\n");
            frames.flush();
            in.readLine();
            return;
        }
        new WireServer(new Wrapped(), ModelLoader::load, mode.equals("bad-target-experts")
                ? org.mtporacle.io.TargetLoader::load : null, System.err).serve(System.in, frames);
    }

    private static boolean misbehaveNow() {
        if (marker != null && marker.toString().equals("always")) {
            return true;
        }
        if (marker == null || Files.exists(marker)) {
            return false;
        }
        try {
            Files.writeString(marker, mode);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return true;
    }

    private static void misbehave() {
        if (!misbehaveNow()) {
            return;
        }
        switch (mode) {
            case "crash" -> {
                System.err.println("fake engine: crashing in prefill");
                System.err.flush();
                Runtime.getRuntime().halt(7);
            }
            case "hang" -> {
                System.err.println("fake engine: hanging in prefill");
                System.err.flush();
                try {
                    Thread.sleep(600_000);
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
            }
            case "garbage" -> {
                System.err.println("fake engine: writing garbage in prefill");
                frames.print("Traceback (most recent call last): oops\n");
                frames.flush();
                try {
                    Thread.sleep(600_000);
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
            }
            default -> {
            }
        }
    }

    private static final class Wrapped implements MtpBackend {
        private final ReferenceBackend inner = new ReferenceBackend();

        @Override
        public String name() {
            return "misbehaving-" + mode;
        }

        @Override
        public String description() {
            return "the reference, misbehaving: " + mode;
        }

        @Override
        public Availability availability() {
            return Availability.yes("test engine");
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            DraftModel m = inner.load(model, options);
            return new DraftModel() {
                @Override
                public MtpModel model() {
                    return m.model();
                }

                @Override
                public String numerics() {
                    return m.numerics();
                }

                @Override
                public DraftRows openRows(List<RowCheckpoint> checkpoints) {
                    return new Rows(m.openRows(checkpoints));
                }

                @Override
                public void close() {
                    m.close();
                }
            };
        }

        @Override
        public boolean supportsTarget() {
            return mode.equals("bad-target-experts");
        }

        /** The reference target whose forwards report an entry with no expert ({@code [0, 0, 0]}). */
        @Override
        public org.mtporacle.api.LoadedTarget loadTarget(org.mtporacle.api.TargetModel model,
                                                          Map<String, String> options) {
            org.mtporacle.api.LoadedTarget t = inner.loadTarget(model, options);
            return new org.mtporacle.api.LoadedTarget() {
                @Override
                public org.mtporacle.api.TargetModel model() {
                    return t.model();
                }

                @Override
                public String numerics() {
                    return t.numerics();
                }

                @Override
                public org.mtporacle.api.TargetRows openRows(List<org.mtporacle.api.TargetCheckpoint> checkpoints) {
                    return new BadTargetRows(t.openRows(checkpoints));
                }

                @Override
                public void close() {
                    t.close();
                }
            };
        }

        @Override
        public org.mtporacle.api.BackendCapabilities capabilities() {
            return mode.equals("greedy-only") ? new org.mtporacle.api.BackendCapabilities(false, 2, 3)
                    : inner.capabilities();
        }

        @Override
        public List<org.mtporacle.api.BackendProfile> profiles() {
            return inner.profiles();
        }
    }

    private static volatile boolean badExperts;

    /** Target rows that list {@code [row, position, layer]} with no expert: not a choice (WIRE.md §5.2). */
    private record BadTargetRows(org.mtporacle.api.TargetRows g) implements org.mtporacle.api.TargetRows,
            org.mtporacle.api.TargetRouterChoices {
        @Override
        public List<Choice> lastRouterChoices() {
            return List.of(new Choice(0, 0, 0, new int[0]));
        }

        @Override
        public int rowCount() {
            return g.rowCount();
        }

        @Override
        public int[] processedTokens() {
            return g.processedTokens();
        }

        @Override
        public void append(List<org.mtporacle.api.TargetCheckpoint> checkpoints) {
            g.append(checkpoints);
        }

        @Override
        public void filterRows(int[] keep) {
            g.filterRows(keep);
        }

        @Override
        public org.mtporacle.api.TargetOutput prefill(HostTensor tokens) {
            return g.prefill(tokens);
        }

        @Override
        public org.mtporacle.api.TargetOutput verify(HostTensor tokens) {
            return g.verify(tokens);
        }

        @Override
        public void commit(int[] accepted) {
            g.commit(accepted);
        }

        @Override
        public org.mtporacle.api.TargetCheckpoint capture(int row) {
            return g.capture(row);
        }

        @Override
        public boolean isClosed() {
            return g.isClosed();
        }

        @Override
        public void close() {
            g.close();
        }
    }

    private record Rows(DraftRows g) implements DraftRows, org.mtporacle.api.RouterChoices {
        @Override
        public List<Choice> lastRouterChoices() {
            if (badExperts) {
                return List.of(new Choice(0, 0, new int[0])); // [row, position] and no expert: not a choice
            }
            return g instanceof org.mtporacle.api.RouterChoices rc ? rc.lastRouterChoices() : List.of();
        }

        @Override
        public int rowCount() {
            return g.rowCount();
        }

        @Override
        public void append(List<RowCheckpoint> checkpoints) {
            g.append(checkpoints);
        }

        @Override
        public void filterRows(int[] keep) {
            g.filterRows(keep);
        }

        @Override
        public void prefill(HostTensor tokens, HostTensor context) {
            if (mode.equals("lenient")) {
                return;
            }
            if (mode.equals("bad-experts")) {
                badExperts = misbehaveNow();
            } else {
                misbehave();
            }
            g.prefill(tokens, context);
        }

        @Override
        public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
            return g.draft(pending, depth, steps, sampling);
        }

        @Override
        public void commit(int[] accepted, HostTensor context) {
            if (!mode.equals("lenient")) {
                g.commit(accepted, context);
            }
        }

        @Override
        public RowCheckpoint capture(int row) {
            return g.capture(row);
        }

        @Override
        public boolean isClosed() {
            return g.isClosed();
        }

        @Override
        public void close() {
            g.close();
        }
    }
}
