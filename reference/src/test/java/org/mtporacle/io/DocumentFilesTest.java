package org.mtporacle.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** A name a document gives a file is checked before the JDK sees it as a path. */
class DocumentFilesTest {
    @Test
    void aNameThatCannotBeAPathOnThisSystemIsAMalformedFileNotAJdkException(@TempDir Path dir) {
        // a lone surrogate has no encoding in any charset a file system uses (UTF-8, or ASCII under LANG=C)
        MtpException e = catchThrowableOfType(MtpException.class, () ->
                DocumentFiles.inFolder(dir, "model-\uD800.safetensors", 1 << 20, "index x.json: weight_map.w"));
        assertThat(e).as("a JDK exception escaped instead").isNotNull();
        assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
        assertThat(e.getMessage()).contains("index x.json: weight_map.w").contains("\\ud800")
                .contains("lone surrogate");
    }
}
