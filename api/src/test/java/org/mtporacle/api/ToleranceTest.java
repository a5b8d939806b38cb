package org.mtporacle.api;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ToleranceTest {

    @Test
    void builtInProfilesKeepTheirDocumentedThresholds() {
        // conformance/SPEC.md's table, written out here independently of the constants
        assertThat(Tolerance.named("exact")).isEqualTo(new Tolerance("exact", 0, 0, 0));
        assertThat(Tolerance.named("f32")).isEqualTo(new Tolerance("f32", 1e-4, 1e-9, 0));
        assertThat(Tolerance.named("bf16")).isEqualTo(new Tolerance("bf16", 0.15, 2e-3, 1e-5));
        assertThat(Tolerance.EXACT.exact()).isTrue();
        assertThat(Tolerance.F32.exact()).isFalse();
    }

    @Test
    void anUnknownNameListsTheBuiltInOnes() {
        assertThatThrownBy(() -> Tolerance.named("fp8"))
                .isInstanceOfSatisfying(MtpException.class, e -> assertThat(e.kind())
                        .isEqualTo(MtpException.Kind.INVALID_ARGUMENT))
                .hasMessage("tolerance: unknown profile 'fp8' (built in: exact, f32, bf16)");
    }

    @Test
    void thresholdsMustBeFiniteAndNonNegative() {
        for (double bad : new double[] {-1e-9, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
            assertThatThrownBy(() -> new Tolerance("c", bad, 0, 0)).hasMessageContaining("tokenGap = " + bad);
            assertThatThrownBy(() -> new Tolerance("c", 0, bad, 0)).hasMessageContaining("kvNmse = " + bad);
            assertThatThrownBy(() -> new Tolerance("c", 0, 0, bad)).hasMessageContaining("hiddenNmse = " + bad);
        }
        assertThat(new Tolerance("c", 0, 0, 0).exact()).isTrue();
    }

    @Test
    void namesAreShortAndPrintable() {
        assertThatThrownBy(() -> new Tolerance("", 0, 0, 0)).isInstanceOf(MtpException.class);
        assertThatThrownBy(() -> new Tolerance(null, 0, 0, 0)).hasMessageContaining("name null");
        assertThatThrownBy(() -> new Tolerance("a b", 0, 0, 0)).isInstanceOf(MtpException.class);
        assertThatThrownBy(() -> new Tolerance("x\npassed", 0, 0, 0)).hasMessageContaining("'x\\u000apassed'");
        assertThatThrownBy(() -> new Tolerance("x".repeat(65), 0, 0, 0)).isInstanceOf(MtpException.class);
        assertThat(new Tolerance("mlx-cuda_bf16.v2+tf32", 0, 0, 0).name()).isEqualTo("mlx-cuda_bf16.v2+tf32");
    }

    @Test
    void aDeclaredProfileMayOnlyTightenTheCeilingAndBuiltInNamesMeanBuiltInValues() {
        Tolerance tighter = new Tolerance("mine", 0.01, 1e-4, 0);
        assertThat(tighter.checkDeclarable("backend x")).isSameAs(tighter);
        assertThat(Tolerance.BF16.checkDeclarable("x")).isSameAs(Tolerance.BF16);
        assertThatThrownBy(() -> new Tolerance("loose", 0.16, 0, 0).checkDeclarable("backend x"))
                .hasMessageStartingWith("backend x: profile loose (token gap 0.16, K/V NMSE 0, hidden NMSE 0) is "
                        + "looser than the loosest built-in profile bf16");
        assertThatThrownBy(() -> new Tolerance("loose", 0, 3e-3, 0).checkDeclarable("x"))
                .hasMessageContaining("looser");
        assertThatThrownBy(() -> new Tolerance("loose", 0, 0, 2e-5).checkDeclarable("x"))
                .hasMessageContaining("looser");
        assertThatThrownBy(() -> new Tolerance("f32", 1e-5, 1e-9, 0).checkDeclarable("x"))
                .hasMessageContaining("profile 'f32' is built in as f32 (token gap 0.0001, K/V NMSE 1E-9, hidden "
                        + "NMSE 0), declared as f32 (token gap 0.00001");
    }

    @Test
    void aBackendProfileRefusesAProfileItMayNotDeclare() {
        assertThatThrownBy(() -> new BackendProfile("b", Map.of(), new Tolerance("wide", 1, 1, 1)))
                .hasMessageContaining("backend profile b: profile wide");
        assertThatThrownBy(() -> new BackendProfile("b", Map.of(), null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void theMatchingProfileIsTheMostSpecificWhoseOptionsTheLoadCarries() {
        BackendProfile nat = new BackendProfile("m/native", Map.of("precision", "native"), Tolerance.BF16);
        BackendProfile f32 = new BackendProfile("m/f32", Map.of("precision", "f32"), Tolerance.F32);
        BackendProfile cudaF32 = new BackendProfile("m/f32-gpu", Map.of("precision", "f32", "device", "gpu"),
                new Tolerance("f32-tf32off", 1e-4, 1e-10, 0));
        List<BackendProfile> all = List.of(nat, f32, cudaF32);
        assertThat(BackendProfile.matching(all, Map.of("precision", "f32", "device", "cpu"))).isSameAs(f32);
        assertThat(BackendProfile.matching(all, Map.of("precision", "f32", "device", "gpu"))).isSameAs(cudaF32);
        assertThat(BackendProfile.matching(all, Map.of("device", "cpu"))).as("none fits: the default").isSameAs(nat);
    }
}
