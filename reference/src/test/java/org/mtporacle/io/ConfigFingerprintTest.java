package org.mtporacle.io;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpConfig;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The config fingerprint is the byte string spec §6 defines ("Config fingerprint"); the expected strings here are
 * written out by hand from that definition, so another engine following the spec computes the same identity.
 */
class ConfigFingerprintTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String fingerprint(String configJson, int vocab, int intermediate) throws Exception {
        ModelConfig c = ModelConfigReader.parse(JSON.readTree(configJson), "test");
        MtpConfig m = c.toMtpConfig(vocab, intermediate);
        return c.fingerprint(m);
    }

    @Test
    void anUnquantizedConfig() throws Exception {
        String f = fingerprint("{\"model_type\": \"qwen3_5_mtp\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                + "\"num_key_value_heads\": 2, \"head_dim\": 16, \"partial_rotary_factor\": 0.25, "
                + "\"rope_theta\": 10000000, \"rms_norm_eps\": 1e-6}", 512, 128);
        assertThat(f).isEqualTo("qwen-mtp-config-v1;MtpConfig[hiddenSize=64, numHeads=4, numKvHeads=2, headDim=16, "
                + "rotaryDims=4, ropeTheta=1.0E7, rmsNormEps=1.0E-6, vocabSize=512, intermediateSize=128];"
                + "quantization=none");
    }

    @Test
    void doublesUseTheShortestDigitsInJavasLayout() throws Exception {
        String f = fingerprint("{\"model_type\": \"qwen3_5_mtp\", \"hidden_size\": 8, \"num_attention_heads\": 1, "
                + "\"num_key_value_heads\": 1, \"head_dim\": 8, \"rope_theta\": 1000000.5, \"rms_norm_eps\": "
                + "0.001}", 3, 2);
        assertThat(f).contains("rotaryDims=8, ropeTheta=1000000.5, rmsNormEps=0.001, vocabSize=3");
        f = fingerprint("{\"model_type\": \"qwen3_5_mtp\", \"hidden_size\": 8, \"num_attention_heads\": 1, "
                + "\"num_key_value_heads\": 1, \"head_dim\": 8, \"rope_theta\": 10000, \"rms_norm_eps\": "
                + "0.0009765625}", 3, 2);
        assertThat(f).contains("ropeTheta=10000.0, rmsNormEps=9.765625E-4,");
    }

    @Test
    void aQuantizedConfigListsDefaultsThenOverridesSortedByKey() throws Exception {
        String f = fingerprint("{\"model_type\": \"qwen3_5_mtp\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                + "\"num_key_value_heads\": 2, \"head_dim\": 16, \"rope_theta\": 10000, \"rms_norm_eps\": 1e-6, "
                + "\"quantization\": {\"group_size\": 32, \"bits\": 4, \"mtp.norm\": false, "
                + "\"lm_head\": {\"bits\": 8}}}", 512, 128);
        assertThat(f).endsWith(";quantization=QuantizationConfig[defaults=affine 4-bit, group 32, "
                + "overrides={lm_head=affine 8-bit, group 32, norm=null}]");
    }
}
