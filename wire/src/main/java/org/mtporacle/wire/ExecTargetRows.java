package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.TargetRows;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * A target group in an engine process: each call is one request (WIRE.md §5.2) sent with the caller's arguments as
 * they are. A reply that breaks the protocol (a missing output tensor, a checkpoint whose digest does not match) is
 * an engine failure; what the outputs hold (their shapes, their numbers) is the kit's to judge. An engine whose
 * handshake claims {@code targetRouterChoices} gets {@link Routed} groups, which report the experts its
 * {@code targetPrefill} and {@code targetVerify} replies list (WIRE.md §5.2, spec §12.5).
 */
class ExecTargetRows implements TargetRows {
    private final EngineProcess engine;
    private final int group;
    private final String lost;
    private final ReentrantLock callLock = new ReentrantLock();
    private volatile String inProgress;
    private volatile boolean closed;
    private volatile List<TargetRouterChoices.Choice> choices = List.of();

    /** A group of an engine that reports its MoE target's router choices. */
    static final class Routed extends ExecTargetRows implements TargetRouterChoices {
        Routed(EngineProcess engine, int group) {
            super(engine, group, null);
        }

        @Override
        public List<Choice> lastRouterChoices() {
            return choices();
        }
    }

    ExecTargetRows(EngineProcess engine, int group, String lost) {
        this.engine = engine;
        this.group = group;
        this.lost = lost;
    }

    /** A group whose engine failed before it existed: every call fails with BACKEND_FAILURE saying why. */
    static ExecTargetRows lost(EngineProcess engine, String why) {
        return new ExecTargetRows(engine, -1, why);
    }

    private ObjectNode args() {
        return WireValues.NODES.objectNode().put("group", group);
    }

    private WireFrame call(String op, ObjectNode args, List<HostTensor> tensors) {
        return enter(op, () -> {
            if (lost != null) {
                throw new MtpException(MtpException.Kind.BACKEND_FAILURE, op + ": " + lost);
            }
            return engine.call(op, args, tensors);
        });
    }

    /** One call at a time on a group (spec §11.11), as {@link ExecDraftRows} does (WIRE.md §8). */
    private <T> T enter(String op, Supplier<T> body) {
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
        return processedTokens().length;
    }

    @Override
    public int[] processedTokens() {
        WireFrame reply = call("targetProcessed", args(), List.of());
        try {
            int[] p = WireValues.readInts(ExecDraftModel.result(reply).get("processed"), "result.processed");
            if (p == null) {
                throw new WireFrame.FramingException("result.processed is missing, expected an array of ints");
            }
            return p;
        } catch (WireFrame.FramingException e) {
            throw engine.violation("targetProcessed", e.getMessage() + " (WIRE.md §5.2)");
        }
    }

    @Override
    public void append(List<TargetCheckpoint> checkpoints) {
        List<HostTensor> tensors = new ArrayList<>();
        ObjectNode a = args();
        a.set("checkpoints", WireValues.targetCheckpoints(checkpoints, tensors));
        call("targetAppend", a, tensors);
    }

    @Override
    public void filterRows(int[] keep) {
        ObjectNode a = args();
        a.set("keep", WireValues.ints(keep));
        call("targetFilterRows", a, List.of());
    }

    @Override
    public TargetOutput prefill(HostTensor tokens) {
        return forward("targetPrefill", tokens);
    }

    @Override
    public TargetOutput verify(HostTensor tokens) {
        return forward("targetVerify", tokens);
    }

    private TargetOutput forward(String op, HostTensor tokens) {
        List<HostTensor> tensors = new ArrayList<>();
        ObjectNode a = args();
        a.set("tokens", WireValues.tensor(tokens, tensors));
        choices = List.of();
        WireFrame reply = call(op, a, tensors);
        ObjectNode r = ExecDraftModel.result(reply);
        choices = routed(op, r);
        try {
            HostTensor logits = reply.tensorAt(r.get("logits"), "result.logits");
            HostTensor pre = reply.tensorAt(r.get("preNorm"), "result.preNorm");
            HostTensor post = reply.tensorAt(r.get("postNorm"), "result.postNorm");
            if (logits == null || pre == null || post == null) {
                throw new WireFrame.FramingException("the result needs logits, preNorm and postNorm tensors, got "
                        + r.properties().stream().map(java.util.Map.Entry::getKey).toList());
            }
            return new TargetOutput(logits, pre, post);
        } catch (WireFrame.FramingException e) {
            throw engine.violation(op, e.getMessage() + " (WIRE.md §5.2)");
        }
    }

    /** The choices of the last prefill or verify (empty when it failed or listed none). */
    final List<TargetRouterChoices.Choice> choices() {
        return choices;
    }

    /**
     * A reply's {@code experts}, {@code [[row, position, layer, e_0, …, e_{K−1}], …]}, when this group reports router
     * choices; a malformed list is an engine failure. The kit judges the experts themselves (spec §12.5).
     */
    private List<TargetRouterChoices.Choice> routed(String op, ObjectNode result) {
        JsonNode n = result.get("experts");
        if (!(this instanceof TargetRouterChoices) || n == null || n.isNull()) {
            return List.of();
        }
        if (!n.isArray()) {
            throw engine.violation(op, "result.experts is " + n.getNodeType() + ", expected an array (WIRE.md §5.2)");
        }
        List<TargetRouterChoices.Choice> out = new ArrayList<>(n.size());
        for (int i = 0; i < n.size(); i++) {
            int[] c;
            try {
                c = WireValues.readInts(n.get(i), "result.experts[" + i + "]");
            } catch (WireFrame.FramingException e) {
                throw engine.violation(op, e.getMessage() + " (WIRE.md §5.2)");
            }
            if (c == null || c.length < 4 || c[0] < 0 || c[1] < 0 || c[2] < 0) {
                throw engine.violation(op, "result.experts[" + i + "] is " + n.get(i) + ", expected [row, position, "
                        + "layer, expert, …] with row, position, layer ≥ 0 and at least one expert (WIRE.md §5.2)");
            }
            out.add(new TargetRouterChoices.Choice(c[0], c[1], c[2], java.util.Arrays.copyOfRange(c, 3, c.length)));
        }
        return List.copyOf(out);
    }

    @Override
    public void commit(int[] accepted) {
        ObjectNode a = args();
        a.set("accepted", WireValues.ints(accepted));
        call("targetCommit", a, List.of());
    }

    @Override
    public TargetCheckpoint capture(int row) {
        WireFrame reply = call("targetCapture", args().put("row", row), List.of());
        TargetCheckpoint cp;
        try {
            cp = WireValues.readTargetCheckpoint(ExecDraftModel.result(reply).get("checkpoint"), reply,
                    "result.checkpoint");
        } catch (WireFrame.FramingException e) {
            throw engine.violation("targetCapture", e.getMessage() + " (WIRE.md §5.3)");
        }
        if (cp == null) {
            throw engine.violation("targetCapture", "result.checkpoint is missing (WIRE.md §5.2)");
        }
        if (cp.digest() == null) {
            return cp.sealed(); // the runner computes the digest of what the engine sent
        }
        if (!cp.digestMatches()) {
            throw engine.violation("targetCapture", "result.checkpoint.digest does not match the checkpoint it came "
                    + "with (spec §13.3, WIRE.md §5.3)");
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
                    engine.call("targetClose", args(), List.of());
                } catch (MtpException ignored) {
                    // close never fails for the caller; an engine failure shows up on the next call
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
