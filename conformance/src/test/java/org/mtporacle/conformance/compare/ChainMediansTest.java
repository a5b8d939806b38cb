package org.mtporacle.conformance.compare;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

/** A chain's typical NMSE: the median of its comparisons per kind, recorded and judged from a minimum count. */
class ChainMediansTest {
    @Test
    void theMedianIsTheMiddleValueOrTheMeanOfTheMiddleTwo() {
        ChainMedians m = new ChainMedians();
        for (double v : new double[] {5, 1, 4, 2, 3}) {
            m.add("keys", v);
        }
        assertThat(m.median("keys")).isEqualTo(3);
        m.add("keys", 100);
        assertThat(m.median("keys")).isEqualTo(3.5);     // sorted 1 2 3 4 5 100
        assertThat(m.count("keys")).isEqualTo(6);
        assertThat(m.median("values")).as("nothing compared").isZero();
    }

    @Test
    void aNanComparisonCountsAsTheLargest() {
        ChainMedians m = new ChainMedians();
        m.add("taps", Double.NaN);
        m.add("taps", Double.NaN);
        m.add("taps", 1e-5);
        assertThat(m.median("taps")).isInfinite();
        assertThat(m.judge(Map.of("taps", 1.0), 1)).isNotNull();
    }

    @Test
    void onlyKindsWithEnoughComparisonsAreRecordedAndJudged() {
        ChainMedians m = new ChainMedians();
        for (int i = 0; i < 40; i++) { // grows past the initial capacity
            m.add("keys", 4e-3);
        }
        for (int i = 0; i < 3; i++) {
            m.add("values", 1.0);
        }
        Map<String, NmseHistogram> h = new LinkedHashMap<>();
        m.recordInto(h, 8);
        assertThat(h).containsOnlyKeys("median.keys");
        assertThat(h.get("median.keys").total()).isEqualTo(1);
        assertThat(h.get("median.keys").max()).isEqualTo(4e-3);
        assertThat(m.judge(Map.of("values", 1e-3), 8)).as("3 comparisons: not judged").isNull();
        assertThat(m.judge(Map.of("keys", 4e-3), 8)).as("at the bound passes").isNull();
        assertThat(m.judge(Map.of("logits", 0.0), 8)).as("a kind never compared").isNull();
        ChainMedians.Excess x = m.judge(Map.of("keys", 1e-3, "values", 1e-3), 8);
        assertThat(x).isEqualTo(new ChainMedians.Excess("keys", 4e-3, 40, 1e-3));
        assertThat(x.describe()).isEqualTo("typical keys NMSE 0.00400 (the median of the chain's 40 comparisons) "
                + "> 0.00100");
    }

    @Test
    void oneOutlierDoesNotMoveTheMedian() {
        ChainMedians m = new ChainMedians();
        for (int i = 0; i < 9; i++) {
            m.add("keys", 2e-5);
        }
        m.add("keys", 0.09); // a conforming engine's rare large comparison
        assertThat(m.median("keys")).isEqualTo(2e-5);
        assertThat(m.judge(Map.of("keys", 1e-3), 8)).isNull();
    }
}
