package org.mtporacle.conformance;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.BackendCapabilities;
import org.mtporacle.conformance.chain.ChainGenerator;

import static org.assertj.core.api.Assertions.assertThat;

/** A campaign a backend's capabilities reduced says so beside its verdict; an unreduced one says nothing. */
class ConformCoverageTest {
    @Test
    void aReducedCampaignNamesWhatItLeftOut() {
        ChainGenerator.Limits l = ChainGenerator.Limits.defaults();
        assertThat(Conform.coverage("exec:e", l, new BackendCapabilities(false, 1, 1)))
                .isEqualTo("coverage: exec:e was checked within its claimed capabilities: draft depth ≤ 1 of "
                        + l.maxDepth() + ", rows ≤ 1 of " + l.maxRows() + ", greedy drafts only (no seeded sampling)");
        assertThat(Conform.coverage("reference", l, BackendCapabilities.ALL)).isNull();
    }
}
