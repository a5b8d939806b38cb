package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.Consumer;

/**
 * Test copies of the committed goldens, edited and re-sealed as a forger would, so that only the edit can be what a
 * check refuses: {@code NAME.safetensors} copied into a folder, {@code NAME.json} parsed, edited, its
 * {@code contentSha256} recomputed, and written beside it.
 */
final class GoldenForgery {
    private GoldenForgery() {
    }

    /** {@code file} under the repository's {@code golden/}. */
    static Path committed(String file) {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden").resolve(file);
    }

    /** The committed golden {@code name} in {@code dir} with {@code edit} applied and contentSha256 recomputed. */
    static Path edited(Path dir, String name, Consumer<ObjectNode> edit) throws IOException {
        Files.copy(committed(name + ".safetensors"), dir.resolve(name + ".safetensors"),
                StandardCopyOption.REPLACE_EXISTING);
        ObjectNode root = GoldenFiles.parse(committed(name + ".json"), "test");
        root.remove("contentSha256");
        edit.accept(root);
        return write(dir, name, root);
    }

    /**
     * {@code root} written as {@code dir/NAME.json} with both checksums recomputed, the tensors' from the
     * {@code NAME.safetensors} already in {@code dir} (for a test that rewrote the tensors file).
     */
    static Path resealed(Path dir, String name, ObjectNode root) throws IOException {
        root.withObject("tensors").put("sha256", JsonText.sha256(Files.readAllBytes(dir.resolve(
                name + ".safetensors"))));
        return write(dir, name, root);
    }

    private static Path write(Path dir, String name, ObjectNode root) throws IOException {
        root.remove("contentSha256");
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Path json = dir.resolve(name + ".json");
        Files.writeString(json, JsonText.pretty(root));
        return json;
    }
}
