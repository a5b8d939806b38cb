package org.mtporacle.reference.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Collections;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.Availability;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/** The backend SPI's target hook: the reference loads the target with its drafter options; others say they have none. */
class ReferenceBackendTargetTest {

    @Test
    void theReferenceBackendLoadsTheTargetWithItsOptions() {
        ExternalTarget x = ExternalTarget.load("float32");
        ReferenceBackend backend = new ReferenceBackend();
        assertThat(backend.supportsTarget()).isTrue();
        float[] viaBackend;
        try (var t = backend.loadTarget(x.target(), Map.of("mode", "scalar", "threads", "2"));
             var rows = t.openRows(Collections.singletonList(null))) {
            TargetOutput out = rows.prefill(HostTensor.ofIntRows(new int[][] {{1, 2, 3}}));
            viaBackend = out.logits().toFloatArray();
        }
        try (var t = new ReferenceTarget(x.target(), new Kernels(KernelMode.SCALAR, 1));
             var rows = t.openRows(Collections.singletonList(null))) {
            assertThat(rows.prefill(HostTensor.ofIntRows(new int[][] {{1, 2, 3}})).logits().toFloatArray())
                    .containsExactly(viaBackend);
        }
        assertThatThrownBy(() -> backend.loadTarget(x.target(), Map.of("precision", "f32")))
                .isInstanceOfSatisfying(MtpException.class,
                        e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT));
    }

    @Test
    void aBackendWithoutATargetSaysSo() {
        MtpBackend drafterOnly = new MtpBackend() {
            public String name() {
                return "drafter-only";
            }

            public String description() {
                return "";
            }

            public Availability availability() {
                return Availability.yes("");
            }

            public DraftModel load(MtpModel model, Map<String, String> options) {
                throw new UnsupportedOperationException();
            }
        };
        assertThat(drafterOnly.supportsTarget()).isFalse();
        assertThatThrownBy(() -> drafterOnly.loadTarget(ExternalTarget.load("float32").target(), Map.of()))
                .isInstanceOfSatisfying(MtpException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE);
                    assertThat(e.getMessage()).startsWith("drafter-only: ");
                });
    }
}
