package org.mtporacle.api;

import java.util.Arrays;
import java.util.List;

/**
 * How each row of a draft round samples its proposals (spec §7): one {@link RowSampler} per row, in row order. The
 * caller supplies it with every {@link DraftRows#draft} call, so a sampler always follows its request through
 * {@link DraftRows#filterRows} (spec §10.1.11) and the group holds no RNG state. Values only: any backend can
 * reproduce the draws on its own device.
 */
public record DraftSampling(List<RowSampler> rows) {
    public DraftSampling {
        rows = List.copyOf(rows);
    }

    /** Greedy sampling for {@code rowCount} rows. */
    public static DraftSampling greedy(int rowCount) {
        RowSampler[] all = new RowSampler[rowCount];
        Arrays.fill(all, RowSampler.GREEDY);
        return new DraftSampling(List.of(all));
    }

    public static DraftSampling of(RowSampler... rows) {
        return new DraftSampling(List.of(rows));
    }

    public int rowCount() {
        return rows.size();
    }

    public RowSampler row(int b) {
        return rows.get(b);
    }
}
