package org.mtporacle.conformance.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.BadCall;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Traces are locale-independent: one written under a Turkish default locale reads back anywhere. */
class TraceFilesLocaleTest {
    @Test
    void aTraceWrittenInATurkishLocaleReadsBack(@TempDir Path dir) throws IOException {
        List<Action> actions = List.of(new Action.Append(List.of(-1), false), new Action.Prefill(2, 1),
                new Action.Bad(BadCall.FILTER_INDEX_OUT_OF_RANGE, 3), new Action.Draft(2, 4, false),
                new Action.Commit(Action.Acceptance.FULL, 5), new Action.Bad(BadCall.DRAFT_DURING_ROUND, 6));
        ChainTrace t = new ChainTrace(ChainTrace.FORMAT, "tiny", "id", "reference", Map.of(), Tolerance.F32, 9,
                actions, null, actions.size());
        Path file = dir.resolve("t.json");
        Locale saved = Locale.getDefault();
        try {
            Locale.setDefault(Locale.forLanguageTag("tr-TR"));
            TraceFiles.write(t, file);
            assertThat(java.nio.file.Files.readString(file)).as("names are plain ASCII, as other engines read them")
                    .contains("\"filter_index_out_of_range\"").contains("\"full\"");
            assertThat(TraceFiles.read(file).actions()).isEqualTo(actions);
        } finally {
            Locale.setDefault(saved);
        }
        assertThat(TraceFiles.read(file).actions()).isEqualTo(actions);
    }
}
