package org.mtporacle.tools;

import org.mtporacle.conformance.FixtureRecipe;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code --model DIR}: conform, tck, golden record. The user's own model directory in place of (or beside) a bundled
 * fixture: a drafter checkpoint (a Hugging Face release or a converted companion) or a hybrid release, whose target
 * {@code --contexts target} then reads. Synthetic contexts take the model's own hidden size and vocabulary.
 */
final class ModelOption {
    @Option(names = "--model", paramLabel = "DIR",
            description = "Your own model directory (repeatable where --fixture is): a drafter checkpoint (a Hugging "
                    + "Face release or a converted companion) or a hybrid release (its target feeds --contexts "
                    + "target). Runs in place of the default fixtures.")
    List<Path> dirs = new ArrayList<>();

    boolean given() {
        return !dirs.isEmpty();
    }

    /** The directories as recipes, each loaded once to check it (a bad one is one line, exit 3). */
    List<FixtureRecipe> recipes() {
        return dirs.stream().map(FixtureRecipe::directory).toList();
    }
}
