package org.mtporacle.reference.kernels;

import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/** Runs the kernel JMH benchmarks matching {@code args[0]} (default: all in this package) on the test classpath. */
public final class JmhMain {
    private JmhMain() {
    }

    public static void main(String[] args) throws RunnerException {
        String include = args.length > 0 ? args[0] : "org.mtporacle.reference.kernels.*Benchmark.*";
        new Runner(new OptionsBuilder().include(include)
                .jvmArgsAppend("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED").build())
                .run();
    }
}
