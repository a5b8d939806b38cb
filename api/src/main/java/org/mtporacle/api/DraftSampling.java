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
    /** @throws MtpException INVALID_ARGUMENT for a null list or a null row sampler */
    public DraftSampling {
        if (rows == null) {
            throw MtpException.invalidArgument("sampling: the list of row samplers is null");
        }
        for (int b = 0; b < rows.size(); b++) {
            if (rows.get(b) == null) {
                throw MtpException.invalidArgument("sampling: row " + b + " has no sampler (null); give one "
                        + "RowSampler per row, RowSampler.GREEDY for greedy (spec §7)");
            }
        }
        rows = List.copyOf(rows);
    }

    /** Greedy sampling for {@code rowCount} rows. */
    public static DraftSampling greedy(int rowCount) {
        RowSampler[] all = new RowSampler[rowCount];
        Arrays.fill(all, RowSampler.GREEDY);
        return new DraftSampling(List.of(all));
    }

    public static DraftSampling of(RowSampler... rows) {
        return new DraftSampling(rows == null ? null : Arrays.asList(rows));
    }

    public int rowCount() {
        return rows.size();
    }

    public RowSampler row(int b) {
        return rows.get(b);
    }
}
