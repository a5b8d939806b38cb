package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * A target group in an engine process: each call is one request (WIRE.md §5.2) sent with the caller's arguments as
 * they are. A reply that breaks the protocol (a missing output tensor, a checkpoint whose digest does not match) is
 * an engine failure; what the outputs hold (their shapes, their numbers) is the kit's to judge.
 */
final class ExecTargetRows implements TargetRows {
    private final EngineProcess engine;
    private final int group;
    private final String lost;
    private final ReentrantLock callLock = new ReentrantLock();
    private volatile String inProgress;
    private volatile boolean closed;

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
        WireFrame reply = call(op, a, tensors);
        ObjectNode r = ExecDraftModel.result(reply);
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
