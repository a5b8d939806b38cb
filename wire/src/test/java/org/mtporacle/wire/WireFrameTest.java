package org.mtporacle.wire;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Framing (WIRE.md §2) against hand-written bytes, and the exec: command split (§1). */
class WireFrameTest {

    @Test
    void aFrameIsOneJsonLineThenTheRawLittleEndianBytesOfEachTensorInOrder() throws Exception {
        ObjectNode h = WireValues.NODES.objectNode().put("id", 4).put("op", "prefill");
        HostTensor tokens = HostTensor.ofInts(new int[] {1, 258}, 1, 2);
        HostTensor ctx = HostTensor.ofFloats(new float[] {1.0f}, 1, 1, 1);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        WireFrame.write(out, h, List.of(tokens, ctx));
        byte[] bytes = out.toByteArray();
        String head = "{\"id\":4,\"op\":\"prefill\",\"tensors\":[{\"dtype\":\"I32\",\"shape\":[1,2],\"nbytes\":8},"
                + "{\"dtype\":\"F32\",\"shape\":[1,1,1],\"nbytes\":4}]}\n";
        byte[] expected = new byte[head.length() + 12];
        System.arraycopy(head.getBytes(StandardCharsets.UTF_8), 0, expected, 0, head.length());
        byte[] payload = {1, 0, 0, 0, 2, 1, 0, 0, 0, 0, (byte) 0x80, 0x3f}; // 1, 258, 1.0f little-endian
        System.arraycopy(payload, 0, expected, head.length(), 12);
        assertThat(bytes).isEqualTo(expected);

        WireFrame back = WireFrame.read(new ByteArrayInputStream(bytes));
        assertThat(back.header().get("op").asText()).isEqualTo("prefill");
        assertThat(back.tensors()).hasSize(2);
        assertThat(back.tensors().get(0).contentEquals(tokens)).isTrue();
        assertThat(back.tensors().get(1).contentEquals(ctx)).isTrue();
        assertThat(back.tensorAt(WireValues.NODES.objectNode().put("tensor", 1), "context").contentEquals(ctx))
                .isTrue();
    }

    @Test
    void framesFollowEachOtherAndAnEmptyStreamEndsCleanly() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        HostTensor big = HostTensor.ofFloats(new float[70_000], 70_000); // spans several write chunks
        WireFrame.write(out, WireValues.NODES.objectNode().put("id", 1), List.of(big));
        WireFrame.write(out, WireValues.NODES.objectNode().put("id", 2), List.of());
        ByteArrayInputStream in = new ByteArrayInputStream(out.toByteArray());
        assertThat(WireFrame.read(in).tensors().getFirst().contentEquals(big)).isTrue();
        assertThat(WireFrame.read(in).header().get("id").asInt()).isEqualTo(2);
        assertThat(WireFrame.read(in)).isNull();
    }

    @Test
    void malformedFramesAreRefusedWithWhatWasWrong() {
        assertThatThrownBy(() -> read("Traceback (most recent call last)\n")).hasMessageContaining("not a frame header")
                .hasMessageContaining("Traceback");
        assertThatThrownBy(() -> read("[1,2]\n")).hasMessageContaining("a JSON object expected");
        assertThatThrownBy(() -> read("{\"tensors\":[{\"dtype\":\"F32\",\"shape\":[2],\"nbytes\":4}]}\n"))
                .hasMessageContaining("nbytes = 4, expected 8");
        assertThatThrownBy(() -> read("{\"tensors\":[{\"dtype\":\"Q4\",\"shape\":[2],\"nbytes\":1}]}\n"))
                .hasMessageContaining("dtype = \"Q4\"");
        assertThatThrownBy(() -> read("{\"tensors\":[{\"dtype\":\"U8\",\"shape\":[4],\"nbytes\":4}]}\nab"))
                .hasMessageContaining("ended after 2 of 4 payload bytes");
        assertThatThrownBy(() -> read("{\"id\":1,\"id\":2}\n")).hasMessageContaining("not a frame header");
    }

    private static WireFrame read(String s) throws Exception {
        return WireFrame.read(new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void theCommandSplitsLikeAShellWithoutOne() {
        assertThat(CommandWords.split("python3 engine.py")).containsExactly("python3", "engine.py");
        assertThat(CommandWords.split("  python3 \"my engine.py\" --name 'a b'  "))
                .containsExactly("python3", "my engine.py", "--name", "a b");
        assertThat(CommandWords.split("a\\ b \"q\\\"x\" ''")).containsExactly("a b", "q\"x", "");
        assertThatThrownBy(() -> CommandWords.split("python3 'x")).hasMessageContaining("unclosed ' quote");
        assertThatThrownBy(() -> CommandWords.split("   ")).hasMessageContaining("no command");
    }

    @Test
    void aSeedTravelsAsItsUnsignedDecimal() {
        var s = WireValues.sampling(org.mtporacle.api.DraftSampling.of(
                org.mtporacle.api.RowSampler.of(0.7, 5, 0.9, -3L)));
        assertThat(s.get(0).get("seed").asText()).isEqualTo("18446744073709551613");
        assertThat(DType.fromSafetensorsName("BF16")).isEqualTo(DType.BF16);
    }
}
