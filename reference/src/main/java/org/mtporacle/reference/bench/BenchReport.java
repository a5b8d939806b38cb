package org.mtporacle.reference.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.List;

/**
 * The figures of one {@link KernelBench} run. Memory-bound rows report GB/s and {@code ratio} to the same-run read
 * baseline at the same thread count; compute-bound rows report GFLOP/s and {@code ratio} to OpenBLAS when measured.
 */
public record BenchReport(String kernels, String cpu, List<Row> rows, List<String> notes) {
    /** One measurement: median seconds over the repetitions and the derived rate. */
    public record Row(String name, int threads, double medianSeconds, String unit, double rate, Double ratio,
            Double target) {
    }

    /** A fixed-width table. */
    public String toTable() {
        StringBuilder sb = new StringBuilder();
        sb.append("kernels: ").append(kernels).append('\n').append("cpu: ").append(cpu).append('\n');
        sb.append(String.format("%-46s %7s %12s %12s %8s %8s%n", "benchmark", "threads", "median ms", "rate",
                "ratio", "target"));
        for (Row r : rows) {
            sb.append(String.format("%-46s %7d %12.3f %7.2f %-6s %8s %8s%n", r.name(), r.threads(),
                    r.medianSeconds() * 1e3, r.rate(), r.unit(), r.ratio() == null ? "" : String.format("%.3f", r.ratio()),
                    r.target() == null ? "" : String.format("≥%.2f", r.target())));
        }
        for (String n : notes) {
            sb.append("note: ").append(n).append('\n');
        }
        return sb.toString();
    }

    /** The report as indented JSON. */
    public String toJson() {
        try {
            return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(this);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("bench: cannot write JSON: " + e.getMessage(), e);
        }
    }
}
