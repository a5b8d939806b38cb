package org.mtporacle.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.List;

/**
 * The figures of one {@link KernelBench} run. Each row has a rate and, when it is judged, a {@code ratio} to its
 * {@code baseline} (the same-run read bandwidth, a bandwidth floor, OpenBLAS, or the bare compute) and a target:
 * {@code ratio ≥ target} ({@code bound = "min"}) or {@code ratio ≤ target} ({@code bound = "max"}).
 */
public record BenchReport(String kernels, String cpu, String options, List<Row> rows, List<String> notes) {
    public BenchReport {
        rows = List.copyOf(rows);
        notes = List.copyOf(notes);
    }

    /**
     * One measurement: the median seconds over the repetitions and the derived rate.
     *
     * @param status {@code PASS}, {@code MISS}, or empty when the row has no target
     */
    public record Row(String name, int threads, double medianSeconds, String unit, double rate, Double ratio,
            String baseline, Double target, String bound, String status) {
        /** A row without a target. */
        static Row info(String name, int threads, double seconds, String unit, double rate) {
            return new Row(name, threads, seconds, unit, rate, null, null, null, null, "");
        }

        /** A row with a ratio to a baseline but no target (a bound the judged rows are read against). */
        static Row compared(String name, int threads, double seconds, String unit, double rate, double ratio,
                String baseline) {
            return new Row(name, threads, seconds, unit, rate, ratio, baseline, null, null, "");
        }

        /** A row judged {@code ratio ≥ target}. */
        static Row atLeast(String name, int threads, double seconds, String unit, double rate, double ratio,
                String baseline, double target) {
            return new Row(name, threads, seconds, unit, rate, ratio, baseline, target, "min",
                    ratio >= target ? "PASS" : "MISS");
        }

        /** A row judged {@code ratio ≤ target}. */
        static Row atMost(String name, int threads, double seconds, String unit, double rate, double ratio,
                String baseline, double target) {
            return new Row(name, threads, seconds, unit, rate, ratio, baseline, target, "max",
                    ratio <= target ? "PASS" : "MISS");
        }
    }

    /** A fixed-width table: one line per row, the ratio with its baseline and target, PASS/MISS marked. */
    public String toTable() {
        StringBuilder sb = new StringBuilder();
        sb.append("kernels: ").append(kernels).append('\n').append("cpu: ").append(cpu).append('\n')
                .append("options: ").append(options).append('\n');
        sb.append(String.format("%-50s %3s %11s %16s %7s %-16s %7s %s%n", "benchmark", "thr", "median ms", "rate",
                "ratio", "of", "target", ""));
        for (Row r : rows) {
            sb.append(String.format("%-50s %3d %11.3f %9.2f %-7s %7s %-16s %7s %s%n", r.name(), r.threads(),
                    r.medianSeconds() * 1e3, r.rate(), r.unit(),
                    r.ratio() == null ? "" : String.format("%.3f", r.ratio()),
                    r.baseline() == null ? "" : r.baseline(),
                    r.target() == null ? "" : ("max".equals(r.bound()) ? "≤" : "≥") + String.format("%.2f", r.target()),
                    r.status()));
        }
        long pass = rows.stream().filter(r -> r.status().equals("PASS")).count();
        long miss = rows.stream().filter(r -> r.status().equals("MISS")).count();
        sb.append(String.format("targets: %d PASS, %d MISS%n", pass, miss));
        for (String n : notes) {
            sb.append("note: ").append(n).append('\n');
        }
        return sb.toString();
    }

    /** The report as indented JSON (the same fields as the records). */
    public String toJson() {
        try {
            return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(this);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("bench: cannot write JSON: " + e.getMessage(), e);
        }
    }
}
