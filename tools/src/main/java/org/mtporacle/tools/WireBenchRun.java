package org.mtporacle.tools;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.api.Tolerance;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.wire.ExecBackend;
import org.mtporacle.wire.WireBench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code mtp bench --wire}: the protocol micro-benchmark ({@link WireBench}) against the reference served by this
 * {@code mtp} ({@code serve-wire}), then the whole-chain overhead: the same generated lockstep chains on {@code small}
 * with the reference as the subject in process and behind the wire.
 */
final class WireBenchRun {
    private WireBenchRun() {
    }

    record Result(WireBench protocol, int chains, double inProcessSeconds, double wireSeconds) {
        double ratio() {
            return wireSeconds / inProcessSeconds;
        }

        /** The subject's share alone, taking the oracle's share as half the in-process time (both sides equal). */
        double subjectRatio() {
            return (wireSeconds - inProcessSeconds / 2) / (inProcessSeconds / 2);
        }

        String table() {
            return String.format(Locale.ROOT, """
                    wire protocol (mtp-oracle-wire/1, the reference behind `mtp serve-wire`):
                      empty call round trip     median %8.1f µs   p99 %8.1f µs      (target ≤ 100 µs median)
                      2048×1024 F32 context     median %8.2f ms   %6.2f GB/s          (target ≥ 1 GB/s)
                      whole chains on small     %d chains: in process %.2f s, over the wire %.2f s: ratio %.3f
                                                (target ≤ 1.3×); the subject's share alone: %.3f×
                    """, protocol.pingMedianMicros(), protocol.pingP99Micros(), protocol.transferMedianMillis(),
                    protocol.transferGigabytesPerSecond(), chains, inProcessSeconds, wireSeconds, ratio(),
                    subjectRatio());
        }

        String json() {
            return String.format(Locale.ROOT, "{\"pingMedianMicros\": %.2f, \"pingP99Micros\": %.2f, "
                            + "\"transferMedianMillis\": %.3f, \"transferGBps\": %.3f, \"chains\": %d, "
                            + "\"inProcessSeconds\": %.3f, \"wireSeconds\": %.3f, \"chainRatio\": %.4f, "
                            + "\"subjectRatio\": %.4f}", protocol.pingMedianMicros(), protocol.pingP99Micros(),
                    protocol.transferMedianMillis(), protocol.transferGigabytesPerSecond(), chains, inProcessSeconds,
                    wireSeconds, ratio(), subjectRatio());
        }
    }

    static Result run(String engine, String fixture, int chains, Consumer<String> progress) {
        String command = engine != null ? engine : SelfCommand.of("serve-wire", "--backend", "reference");
        progress.accept("wire: empty calls and 8 MiB transfers");
        WireBench p = WireBench.measure(command, 20_000, 40);
        MtpModel model = FixtureRecipe.named(fixture).load(FixtureRecipe.defaultCache());
        ChainGenerator gen = new ChainGenerator(ChainGenerator.Limits.defaults());
        List<List<Action>> chainList = new ArrayList<>();
        for (int i = 0; i < chains; i++) {
            chainList.add(gen.generate(Campaign.chainSeed(7, i)));
        }
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(),
                Runtime.getRuntime().availableProcessors())) {
            double in;
            double wire;
            try (DraftModel local = new ReferenceBackend().load(model, Map.of())) {
                progress.accept("wire: " + chains + " chains on " + fixture + " in process");
                in = time(new Lockstep(oracle, local, Tolerance.EXACT), chainList);
            }
            ExecBackend exec = new ExecBackend(command, Duration.ofSeconds(120));
            Tolerance claimed = exec.profiles().getFirst().tolerance(); // exact for the reference, the engine's claim
            try (DraftModel remote = exec.load(model, exec.profiles().getFirst().options())) {
                progress.accept("wire: " + chains + " chains on " + fixture + " over the wire");
                wire = time(new Lockstep(oracle, remote, claimed), chainList);
            }
            return new Result(p, chains, in, wire);
        }
    }

    private static double time(Lockstep l, List<List<Action>> chains) {
        for (int i = 0; i < Math.min(3, chains.size()); i++) { // warm-up
            l.run(i, chains.get(i));
        }
        long s = System.nanoTime();
        for (int i = 0; i < chains.size(); i++) {
            ChainOutcome o = l.run(i, chains.get(i));
            if (!o.passed()) { // a diverging chain stops early, so its time would not compare
                throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "bench --wire: chain " + i
                        + " diverged, so the chain times would not compare (run mtp conform on it): "
                        + o.divergence().message());
            }
        }
        return (System.nanoTime() - s) / 1e9;
    }
}
