package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.Test;
import org.mtporacle.conformance.chain.BadCall;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** WIRE.md §6.1 lists every bad call of the catalogue with the kind the TCK demands, so engine authors see all. */
class WireCatalogueDocTest {
    @Test
    void wireMdListsEveryBadCallWithItsKindAndSection() throws Exception {
        String doc = Files.readString(Path.of("WIRE.md")); // the module folder is the working directory
        for (BadCall c : BadCall.values()) {
            assertThat(doc).as("WIRE.md §6.1 row of %s", c)
                    .contains("| `" + c.name() + "` | `" + c.expectedKind() + "` | " + c.rule() + " |");
        }
    }
}
