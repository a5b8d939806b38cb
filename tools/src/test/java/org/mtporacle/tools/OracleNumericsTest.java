package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The oracle's numerics do not depend on the JVM's platform math: every transcendental is {@link StrictMath}
 * (fdlibm, specified bit for bit) or built from basic IEEE operations, so the committed goldens verify with the JIT's
 * math intrinsics switched off.
 */
class OracleNumericsTest {
    /** {@code Math.exp(} and its kin, which HotSpot may replace by intrinsics that differ in the last ulp. */
    private static final Pattern PLATFORM_MATH = Pattern.compile(
            "(?<![A-Za-z0-9_$])Math\\.(exp|expm1|log|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh"
                    + "|cbrt|hypot)\\(");
    private static final String REPORT = Path.of("conformance", "report").toString();
    private static final long VERIFY_TIMEOUT_S = 120;

    private static Path root() {
        return Path.of(System.getProperty("mtp.repo.root", "..")).toAbsolutePath().normalize();
    }

    @Test
    void oracleSourcesCallNoPlatformMathTranscendental() throws IOException {
        List<String> hits = new ArrayList<>();
        for (String dir : List.of("api/src/main", "reference/src/main", "conformance/src/main")) {
            try (Stream<Path> files = Files.walk(root().resolve(dir))) {
                // the HTML report's log-scale plot positions are drawing, not values anything is judged by
                for (Path f : files.filter(p -> p.toString().endsWith(".java") && !p.toString().contains(REPORT))
                        .toList()) {
                    List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                    for (int i = 0; i < lines.size(); i++) {
                        if (PLATFORM_MATH.matcher(lines.get(i)).find()) {
                            hits.add(root().relativize(f) + ":" + (i + 1) + ": " + lines.get(i).strip());
                        }
                    }
                }
            }
        }
        assertThat(hits).as("platform Math transcendentals in the oracle (use StrictMath or reference.kernels.Exp)")
                .isEmpty();
    }

    /** A fresh JVM without HotSpot's libm intrinsics replays every committed golden to the same digests. */
    @Test
    void committedGoldensVerifyWithTheJitsMathIntrinsicsSwitchedOff() throws Exception {
        Path golden = root().resolve("golden");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xss4m",
                "-XX:+UnlockDiagnosticVMOptions", "-XX:-UseLibmIntrinsic"));
        if (System.getProperty("mtp.cache") != null) {
            cmd.add("-Dmtp.cache=" + System.getProperty("mtp.cache")); // the fixtures other tests wrote
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), MtpCommand.class.getName(),
                "golden", "verify", "--quiet", golden.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(VERIFY_TIMEOUT_S, TimeUnit.SECONDS)).as("golden verify finished").isTrue();
        long n;
        try (Stream<Path> s = Files.list(golden)) {
            n = s.filter(f -> f.toString().endsWith(".json")).count();
        }
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains(n + " golden trace(s): " + n + " passed");
    }
}
