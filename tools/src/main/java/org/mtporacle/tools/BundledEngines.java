package org.mtporacle.tools;

import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.wire.ExecBackend;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The second implementation a plain {@code mtp conform} holds the reference to on any machine: the bundled numpy
 * engine ({@code adapters/python/examples/numpy_backend.py}, written from the spec alone) over {@code exec:}, where
 * {@code python3} and numpy are installed. Found through the system property {@value #HOME} (the repository root,
 * which the {@code ./mtp} launcher sets); when it cannot run, {@link Found#note} says why.
 */
final class BundledEngines {
    /** The system property naming the repository root. */
    static final String HOME = "mtp.home";
    static final String NUMPY_ENGINE = "adapters/python/examples/numpy_backend.py";

    private BundledEngines() {
    }

    /** The engine's profiles to run (none when it cannot run) and one line saying what was found. */
    record Found(List<BackendSelection.Choice> choices, String note) {
    }

    static Found numpy(String home) {
        if (home == null) {
            return new Found(List.of(), "numpy engine: not run (no repository root to find " + NUMPY_ENGINE
                    + " in; run ./mtp from a checkout, or pass --backend exec:'python3 PATH/numpy_backend.py')");
        }
        Path script = Path.of(home).resolve(NUMPY_ENGINE).toAbsolutePath().normalize();
        if (!Files.isRegularFile(script)) {
            return new Found(List.of(), "numpy engine: not run (" + script + " is missing)");
        }
        String missing = missingPython();
        if (missing != null) {
            return new Found(List.of(), "numpy engine: not run (" + missing + "), so no second implementation was "
                    + "compared with the reference");
        }
        ExecBackend b = new ExecBackend("python3 '" + script.toString().replace("'", "'\\''") + "'",
                ExecBackend.configuredTimeout());
        return new Found(b.profiles().stream().map(p -> new BackendSelection.Choice(b, p)).toList(),
                "numpy engine: " + b.name() + " (an independent implementation in numpy float64, over exec:)");
    }

    /** Null when {@code python3 -c 'import numpy'} works, else what is missing and how to get it. */
    private static String missingPython() {
        try {
            Process p = new ProcessBuilder("python3", "-c", "import numpy").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "python3 -c 'import numpy' did not finish in 30 s";
            }
            return p.exitValue() == 0 ? null : "python3 has no numpy: pip install numpy";
        } catch (IOException e) {
            return "python3 was not found";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }
}
