package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;

import java.util.ArrayList;
import java.util.List;

/**
 * A group in an engine process: each call is one request (WIRE.md §5) sent with the caller's arguments as they are.
 * A reply that breaks the protocol (a missing field, proposals of the wrong shape) is an engine failure. An engine
 * whose handshake claims {@code routerChoices} gets {@link Routed} groups, which report the experts its
 * {@code prefill}, {@code draft} and {@code commit} replies list (WIRE.md §5, spec §12.5).
 */
class ExecDraftRows implements DraftRows {
    private final EngineProcess engine;
    private final int group;
    private final String lost;
    private final java.util.concurrent.locks.ReentrantLock callLock = new java.util.concurrent.locks.ReentrantLock();
    private volatile String inProgress;
    private volatile boolean closed;
    private volatile List<RouterChoices.Choice> choices = List.of();

    /** A group of an engine that reports its MoE router's choices. */
    static final class Routed extends ExecDraftRows implements RouterChoices {
        Routed(EngineProcess engine, int group) {
            super(engine, group, null);
        }

        @Override
        public List<Choice> lastRouterChoices() {
            return choices();
        }
    }

    ExecDraftRows(EngineProcess engine, int group) {
        this(engine, group, null);
    }

    ExecDraftRows(EngineProcess engine, int group, String lost) {
        this.engine = engine;
        this.group = group;
        this.lost = lost;
    }

    /** A group whose engine failed before it existed: every call fails with BACKEND_FAILURE saying why. */
    static ExecDraftRows lost(EngineProcess engine, String why) {
        return new ExecDraftRows(engine, -1, why);
    }

    private ObjectNode args() {
        return WireValues.NODES.objectNode().put("group", group);
    }

    private ObjectNode call(String op, ObjectNode args, List<HostTensor> tensors) {
        return enter(op, () -> send(op, args, tensors));
    }

    private ObjectNode send(String op, ObjectNode args, List<HostTensor> tensors) {
        if (lost != null) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, op + ": " + lost);
        }
        return ExecDraftModel.result(engine.call(op, args, tensors));
    }

    /**
     * One call at a time on a group (spec §11.11): the protocol is sequential, so a call that overlaps another on
     * this group fails here with ILLEGAL_STATE, as the contract says, and never reaches the pipe (WIRE.md §8).
     */
    private <T> T enter(String op, java.util.function.Supplier<T> body) {
        boolean reentrant = callLock.isHeldByCurrentThread();
        if (reentrant || !callLock.tryLock()) {
            String other = inProgress;
            throw MtpException.illegalState(op + ": " + (other == null ? "another call" : other)
                    + " is in progress on this group " + (reentrant ? "(this call comes from inside it)"
                    : "on another thread") + "; a group serves one call at a time (spec §11.11)");
        }
        try {
            inProgress = op;
            return body.get();
        } finally {
            inProgress = null;
            callLock.unlock();
        }
    }

    @Override
    public int rowCount() {
        JsonNode n = call("rowCount", args(), List.of()).get("rows");
        if (n == null || !n.isIntegralNumber() || !n.canConvertToInt()) {
            throw engine.violation("rowCount", "result.rows is " + n + ", expected an int (WIRE.md §5)");
        }
        return n.asInt();
    }

    @Override
    public void append(List<RowCheckpoint> checkpoints) {
        List<HostTensor> tensors = new ArrayList<>();
        ObjectNode a = args();
        a.set("checkpoints", WireValues.checkpoints(checkpoints, tensors));
        call("append", a, tensors);
    }

    @Override
    public void filterRows(int[] keep) {
        ObjectNode a = args();
        a.set("keep", WireValues.ints(keep));
        call("filterRows", a, List.of());
    }

    @Override
    public void prefill(HostTensor tokens, HostTensor context) {
        List<HostTensor> tensors = new ArrayList<>();
        ObjectNode a = args();
        a.set("tokens", WireValues.tensor(tokens, tensors));
        a.set("context", WireValues.tensor(context, tensors));
        choices = List.of();
        choices = routed("prefill", call("prefill", a, tensors));
    }

    @Override
    public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
        ObjectNode a = args();
        a.set("pending", WireValues.ints(pending));
        a.put("depth", depth);
        a.set("steps", WireValues.longs(steps));
        a.set("sampling", WireValues.sampling(sampling));
        choices = List.of();
        ObjectNode r = call("draft", a, List.of());
        List<RouterChoices.Choice> routed = routed("draft", r);
        int[][] proposals;
        try {
            proposals = WireValues.readProposals(r.get("proposals"), "result.proposals");
        } catch (WireFrame.FramingException e) {
            throw engine.violation("draft", e.getMessage() + " (WIRE.md §5)");
        }
        if (pending != null && depth >= 0) {
            boolean fits = proposals.length == pending.length;
            for (int b = 0; fits && b < proposals.length; b++) {
                fits = proposals[b].length == depth;
            }
            if (!fits) {
                throw engine.violation("draft", "result.proposals has " + proposals.length + " rows of lengths "
                        + java.util.Arrays.stream(proposals).map(p -> String.valueOf(p.length)).toList()
                        + ", expected " + pending.length + " rows of " + depth + " (WIRE.md §5)");
            }
        }
        choices = routed;
        return proposals;
    }

    @Override
    public void commit(int[] accepted, HostTensor context) {
        List<HostTensor> tensors = new ArrayList<>();
        ObjectNode a = args();
        a.set("accepted", WireValues.ints(accepted));
        a.set("context", WireValues.tensor(context, tensors));
        choices = List.of();
        choices = routed("commit", call("commit", a, tensors));
    }

    /** The choices of the last prefill, draft or commit (empty when it failed or listed none). */
    final List<RouterChoices.Choice> choices() {
        return choices;
    }

    /**
     * A reply's {@code experts}, {@code [[row, position, e_0, …], …]}, when this group reports router choices; a
     * malformed list is an engine failure. The kit judges the experts themselves (spec §12.5).
     */
    private List<RouterChoices.Choice> routed(String op, ObjectNode result) {
        JsonNode n = result.get("experts");
        if (!(this instanceof RouterChoices) || n == null || n.isNull()) {
            return List.of();
        }
        if (!n.isArray()) {
            throw engine.violation(op, "result.experts is " + n.getNodeType() + ", expected an array (WIRE.md §5)");
        }
        List<RouterChoices.Choice> out = new ArrayList<>(n.size());
        for (int i = 0; i < n.size(); i++) {
            int[] c;
            try {
                c = WireValues.readInts(n.get(i), "result.experts[" + i + "]");
            } catch (WireFrame.FramingException e) {
                throw engine.violation(op, e.getMessage() + " (WIRE.md §5)");
            }
            if (c == null || c.length < 3 || c[0] < 0 || c[1] < 0) {
                throw engine.violation(op, "result.experts[" + i + "] is " + n.get(i) + ", expected [row, position, "
                        + "expert, …] with row, position ≥ 0 and at least one expert (WIRE.md §5)");
            }
            out.add(new RouterChoices.Choice(c[0], c[1], java.util.Arrays.copyOfRange(c, 2, c.length)));
        }
        return List.copyOf(out);
    }

    @Override
    public RowCheckpoint capture(int row) {
        return enter("capture", () -> captureNow(row));
    }

    private RowCheckpoint captureNow(int row) {
        if (lost != null) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "capture: " + lost);
        }
        WireFrame reply = engine.call("capture", args().put("row", row), List.of());
        RowCheckpoint cp;
        try {
            cp = WireValues.readCheckpoint(ExecDraftModel.result(reply).get("checkpoint"), reply,
                    "result.checkpoint");
        } catch (WireFrame.FramingException e) {
            throw engine.violation("capture", e.getMessage() + " (WIRE.md §5.1)");
        }
        if (cp == null) {
            throw engine.violation("capture", "result.checkpoint is missing (WIRE.md §5)");
        }
        if (cp.digest() == null) {
            return cp.sealed(); // an engine older than the digest: the runner computes it from what the engine sent
        }
        if (!cp.digestMatches()) {
            throw engine.violation("capture", "result.checkpoint.digest does not match the checkpoint it came with "
                    + "(spec §6, WIRE.md §5.1)");
        }
        return cp;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        callLock.lock(); // waits for a call running on another thread (spec §11.11)
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (lost == null && engine.alive()) {
                try {
                    send("close", args(), List.of());
                } catch (MtpException ignored) {
                    // close never fails for the caller; an engine failure here shows up on the next call
                }
            }
            if (lost == null) {
                engine.groupClosed();
            }
        } finally {
            callLock.unlock();
        }
    }
}
