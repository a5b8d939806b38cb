package org.mtporacle.wire;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendCapabilities;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetModel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A backend that is an engine in another process (WIRE.md): {@code exec:COMMAND ARGS} starts the command, speaks
 * {@code mtp-oracle-wire/1} with it and maps its replies onto the contract. It never checks an argument on the
 * engine's behalf; whatever the caller passes is sent as it is. Every failure of the engine process is a
 * BACKEND_FAILURE of this backend quoting the engine's last stderr lines; the next group starts a fresh process.
 */
public final class ExecBackend implements MtpBackend {
    /** The system property {@code --timeout} sets: seconds per call (decimals allowed). */
    public static final String TIMEOUT_PROPERTY = "mtp.wire.timeout";
    /** The per-call timeout when none is set. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
    /** The least time {@code hello} and {@code load} get, whatever the per-call timeout. */
    public static final Duration MIN_START_TIMEOUT = Duration.ofSeconds(60);

    private final String commandLine;
    private final List<String> command;
    private final Duration timeout;
    private final java.nio.file.Path directory;
    private Hello hello;
    private EngineProcess spare; // the probe's process, handed to the first load
    private String probeFailure;
    private boolean cannotStart; // the probe could not even start the command

    /**
     * @param commandLine the text after {@code exec:}, split as WIRE.md §1 says
     * @throws MtpException INVALID_ARGUMENT for an empty command or an unclosed quote
     */
    public ExecBackend(String commandLine, Duration timeout) {
        this(commandLine, timeout, null);
    }

    /**
     * As {@link #ExecBackend(String, Duration)}, the command started in {@code directory} (null: this process's
     * working directory), as a replay of a trace recorded in another folder does.
     */
    public ExecBackend(String commandLine, Duration timeout, java.nio.file.Path directory) {
        this.directory = directory;
        this.commandLine = commandLine;
        this.command = CommandWords.split(commandLine);
        if (timeout.isNegative() || timeout.isZero()) {
            throw MtpException.invalidArgument("exec: timeout " + timeout + " must be positive");
        }
        this.timeout = timeout;
    }

    /** The timeout from {@value #TIMEOUT_PROPERTY}, else {@link #DEFAULT_TIMEOUT}. */
    public static Duration configuredTimeout() {
        String s = System.getProperty(TIMEOUT_PROPERTY);
        if (s == null || s.isBlank()) {
            return DEFAULT_TIMEOUT;
        }
        double seconds;
        try {
            seconds = Double.parseDouble(s.trim());
        } catch (NumberFormatException e) {
            seconds = Double.NaN;
        }
        if (!(seconds > 0) || seconds > 86_400) {
            throw MtpException.invalidArgument("--timeout " + s + ": expected seconds in (0, 86400]");
        }
        return Duration.ofNanos((long) (seconds * 1e9));
    }

    @Override
    public String name() {
        return "exec:" + commandLine;
    }

    @Override
    public String description() {
        Hello h = probe();
        if (h == null) {
            return "engine over " + WireFrame.PROTOCOL + ": " + commandLine + " (" + probeFailure + ")";
        }
        return h.engineName() + " " + h.engineVersion() + (h.description() == null ? "" : ": " + h.description())
                + " (over " + h.protocol() + ")";
    }

    @Override
    public Availability availability() {
        Hello h = probe();
        if (h == null) {
            if (cannotStart) {
                return Availability.no("cannot run here: " + probeFailure);
            }
            // an engine that fails its handshake is a failing backend, not a missing one: load() reports it
            return Availability.yes("the engine failed its handshake: " + probeFailure);
        }
        if (h.unavailable() != null) {
            return Availability.no(h.engineName() + " " + h.engineVersion() + " says it cannot run here: "
                    + h.unavailable());
        }
        return Availability.yes(h.engineName() + " " + h.engineVersion() + " over " + h.protocol());
    }

    @Override
    public List<BackendProfile> profiles() {
        Hello h = probe();
        if (h == null || h.profiles().isEmpty()) {
            return MtpBackend.super.profiles();
        }
        return h.profiles().stream().map(Hello.Claim::toBackendProfile).toList();
    }

    /** The engine's handshake (starting it once if needed); null when it could not be had. */
    Hello hello() {
        return probe();
    }

    /**
     * Fails fast when the engine started but failed its handshake (WIRE.md §4): one BACKEND_FAILURE naming what went
     * wrong, before a runner spends a rule or a chain on an engine that cannot answer {@code hello}. An engine that
     * cannot be started at all is unavailable instead ({@link #availability()}).
     *
     * @throws MtpException BACKEND_FAILURE with the handshake's failure and the engine's last stderr lines
     */
    public void requireHandshake() {
        if (probe() == null && !cannotStart) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "the engine failed its handshake, so nothing "
                    + "was run: " + probeFailure);
        }
    }

    /** The handshake's seeded sampling, maxRows and maxDepth (WIRE.md §4); everything when it could not be had. */
    @Override
    public BackendCapabilities capabilities() {
        Hello h = probe();
        return h == null ? BackendCapabilities.ALL : new BackendCapabilities(h.capabilities().seededSampling(),
                h.capabilities().maxRows(), h.capabilities().maxDepth());
    }

    /** True when the engine's handshake says it draws seeded samples (WIRE.md §4); false when it could not be had. */
    public boolean seededSampling() {
        Hello h = probe();
        return h != null && h.capabilities().seededSampling();
    }

    /** True when the engine's handshake says it loads {@code bits}-bit affine weights of {@code groupSize}. */
    public boolean loadsAffine(int bits, int groupSize) {
        Hello h = probe();
        return h != null && h.capabilities().quantization().getOrDefault(bits, Set.of()).contains(groupSize);
    }

    /** What hello and load may take: start-up and model loading, at least {@link #MIN_START_TIMEOUT}. */
    Duration startTimeout() {
        return timeout.compareTo(MIN_START_TIMEOUT) > 0 ? timeout : MIN_START_TIMEOUT;
    }

    /** The per-call timeout. */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public DraftModel load(MtpModel model, Map<String, String> options) {
        Hello h = probe();
        if (h == null) {
            throw new MtpException(cannotStart ? MtpException.Kind.UNAVAILABLE : MtpException.Kind.BACKEND_FAILURE,
                    probeFailure);
        }
        if (h.unavailable() != null) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, name() + ": the engine cannot run here: "
                    + h.unavailable());
        }
        String refused = refuses(h, model);
        if (refused != null) {
            throw MtpException.incompatibleModel(name() + ": the engine does not load " + refused
                    + " (its handshake capabilities)");
        }
        EngineProcess first;
        synchronized (this) {
            first = spare;
            spare = null;
        }
        return new ExecDraftModel(this, model, options, first);
    }

    /** True when the engine's handshake claims the {@code target} capability (WIRE.md §4, §5.2). */
    @Override
    public boolean supportsTarget() {
        Hello h = probe();
        return h != null && h.capabilities().target();
    }

    /** Loads a hybrid target into the engine ({@code loadTarget}, WIRE.md §5.2). */
    @Override
    public LoadedTarget loadTarget(TargetModel model, Map<String, String> options) {
        Hello h = probe();
        if (h == null) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, probeFailure);
        }
        if (h.unavailable() != null) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, name() + ": the engine cannot run here: "
                    + h.unavailable());
        }
        if (!h.capabilities().target()) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, name() + ": " + h.engineName() + " "
                    + h.engineVersion() + " runs the drafter only (its handshake does not claim the target "
                    + "capability, WIRE.md §4)");
        }
        EngineProcess first;
        synchronized (this) {
            first = spare;
            spare = null;
        }
        return new ExecTarget(this, model, options, first);
    }

    private static String refuses(Hello h, MtpModel model) {
        Set<DType> dense = new LinkedHashSet<>();
        Set<Integer[]> affine = new LinkedHashSet<>();
        MtpWeights w = model.weights();
        List<LinearWeight> linears = new ArrayList<>(List.of(w.fc(), w.qProj(), w.kProj(), w.vProj(), w.oProj(),
                w.embedding(), w.head()));
        switch (w.mlp()) {
            case MlpWeights.Dense d -> linears.addAll(List.of(d.gateProj(), d.upProj(), d.downProj()));
            case MlpWeights.Moe m -> {
                linears.addAll(List.of(m.router(), m.sharedExpertGate(), m.sharedExpert().gateProj(),
                        m.sharedExpert().upProj(), m.sharedExpert().downProj()));
                for (MlpWeights.Dense x : m.experts()) {
                    linears.addAll(List.of(x.gateProj(), x.upProj(), x.downProj()));
                }
            }
        }
        for (LinearWeight l : linears) {
            switch (l) {
                case LinearWeight.Dense d -> dense.add(d.weight().dtype());
                case LinearWeight.Affine a -> {
                    if (affine.stream().noneMatch(x -> x[0] == a.bits() && x[1] == a.groupSize())) {
                        affine.add(new Integer[] {a.bits(), a.groupSize()});
                    }
                }
            }
        }
        return h.capabilities().refuses(model.layout(), dense, affine);
    }

    /** Starts the engine and shakes hands; the caller owns the process. */
    EngineProcess start() {
        EngineProcess e = EngineProcess.start(name(), command, timeout, directory);
        try {
            handshake(e);
            return e;
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
    }

    private Hello handshake(EngineProcess e) {
        ObjectNode args = WireValues.NODES.objectNode();
        ArrayNode protocols = args.putArray("protocols");
        protocols.add(WireFrame.PROTOCOL);
        args.put("runner", "mtp-oracle " + version());
        WireFrame reply;
        try {
            reply = e.call("hello", args, List.of(), startTimeout());
        } catch (MtpException ex) {
            if (ex.kind() == MtpException.Kind.BACKEND_FAILURE) {
                throw ex;
            }
            throw e.violation("hello", "protocol mismatch: the engine refused the handshake (" + ex.kind() + ": "
                    + ex.getMessage() + "); this runner speaks " + WireFrame.PROTOCOL);
        }
        ObjectNode result = (ObjectNode) reply.header().get("result");
        com.fasterxml.jackson.databind.JsonNode protocol = result.get("protocol");
        if (protocol == null || !WireFrame.PROTOCOL.equals(protocol.asText())) {
            String spoken = protocol == null ? "nothing (no protocol field)" : protocol.asText();
            throw e.violation("hello", "protocol mismatch: the engine speaks " + spoken + ", this runner speaks "
                    + WireFrame.PROTOCOL);
        }
        Hello h;
        try {
            h = Hello.parse(result);
        } catch (WireFrame.FramingException fe) {
            throw e.violation("hello", fe.getMessage() + " (WIRE.md §4)");
        }
        return h;
    }

    private synchronized Hello probe() {
        if (hello != null || probeFailure != null) {
            return hello;
        }
        EngineProcess e;
        try {
            e = EngineProcess.start(name(), command, timeout, directory);
        } catch (MtpException ex) {
            probeFailure = ex.getMessage();
            cannotStart = ex.kind() == MtpException.Kind.UNAVAILABLE;
            return null;
        }
        try {
            try {
                hello = handshake(e);
                spare = e;
            } catch (RuntimeException ex) {
                e.close();
                throw ex;
            }
        } catch (MtpException ex) {
            probeFailure = ex.getMessage();
        }
        return hello;
    }

    static String version() {
        String v = ExecBackend.class.getPackage().getImplementationVersion();
        return v == null ? "development build" : v;
    }
}
