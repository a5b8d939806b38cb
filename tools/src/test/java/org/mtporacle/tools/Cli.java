package org.mtporacle.tools;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/** Runs the {@code mtp} command line in-process and captures what it prints. */
record Cli(int exit, String out) {
    static synchronized Cli run(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(ps);
            picocli.CommandLine cl = MtpCommand.commandLine();
            cl.setErr(new PrintWriter(ps, true));
            int code = cl.execute(args);
            ps.flush();
            return new Cli(code, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(saved);
        }
    }
}
