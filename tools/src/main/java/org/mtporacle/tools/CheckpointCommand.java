package org.mtporacle.tools;

import org.mtporacle.api.UntrustedText;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.io.CheckpointFiles;
import org.mtporacle.io.ModelLoader;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

/**
 * {@code mtp checkpoint}: runs one row of a backend through a seeded prefill and draft rounds and writes its row
 * checkpoint file ({@code mtp-oracle-checkpoint/1}, spec §6), the file {@code mtp inspect} reads and a restored row
 * starts from.
 */
@Command(name = "checkpoint", mixinStandardHelpOptions = true,
        description = {"Write a row checkpoint file (mtp-oracle-checkpoint/1): one row of a backend after a seeded "
                + "prefill of --tokens tokens and --rounds greedy draft rounds (depth 2, all accepted), with "
                + "synthetic hiddens; or, with --seal, an existing checkpoint file with its content digest "
                + "recomputed.", "Read it back with `mtp inspect FILE`."})
final class CheckpointCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @Spec
    CommandSpec spec;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    static final class Source {
        @Option(names = "--fixture", paramLabel = "NAME", description = "Fixture recipe, e.g. tiny (see `mtp fixture "
                + "--list`).")
        String fixture;

        @Option(names = "--model", paramLabel = "DIR", description = "A model directory or .safetensors file.")
        Path model;

        @Option(names = "--seal", paramLabel = "FILE", description = "A checkpoint file to copy to --out with its "
                + "content digest recomputed (spec §6): for a file written before digests, which restore refuses. "
                + "You vouch for its label and tensors; nothing checks them.")
        Path seal;
    }

    @Option(names = "--out", paramLabel = "FILE", required = true, description = "The checkpoint file to write.")
    Path out;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "8",
            description = "Target tokens prefilled (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "0",
            description = "Greedy draft rounds after the prefill, depth 2, all proposals accepted (default: "
                    + "${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1",
            description = "Seed of the tokens and hiddens (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--force", description = "Overwrite FILE if it exists.")
    boolean force;

    @Mixin
    Mixins.Backend backend;

    @Override
    public Integer call() {
        Mixins.Usage.require(spec, tokens >= 1, "--tokens " + tokens + ": must be ≥ 1");
        Mixins.Usage.require(spec, rounds >= 0, "--rounds " + rounds + ": must be ≥ 0");
        if (Files.exists(out) && !force) {
            throw org.mtporacle.api.MtpException.invalidArgument("checkpoint: " + out
                    + " already exists (give --force to overwrite it)");
        }
        if (source.seal != null) {
            if (Files.exists(out) && Files.exists(source.seal) && sameFile(source.seal, out)) {
                // the input is read through a mapping of that very file: writing over it would seal what it becomes
                throw org.mtporacle.api.MtpException.invalidArgument("checkpoint: --out " + UntrustedText.path(out)
                        + " is the --seal input " + UntrustedText.path(source.seal) + " (or a link to it); write the "
                        + "sealed copy to another file");
            }
            RowCheckpoint in = CheckpointFiles.read(source.seal);
            String was = in.digest() == null ? "none" : in.digestMatches() ? "matching" : "not matching";
            RowCheckpoint sealed = in.sealed();
            CheckpointFiles.write(sealed, out);
            System.out.printf("wrote %s: P = %d, draftOffset = %d, content digest %s (recorded one: %s)%n", out,
                    sealed.processedTokens(), sealed.draftOffset(), sealed.digest(), was);
            return MtpCommand.EXIT_OK;
        }
        MtpBackend b = backend.resolve("reference");
        MtpModel model = source.model != null ? ModelLoader.load(source.model)
                : Mixins.Usage.lookup(spec, () -> FixtureRecipe.named(source.fixture))
                .load(FixtureRecipe.defaultCache());
        int h = model.config().hiddenSize();
        int vocab = model.config().vocabSize();
        RowCheckpoint cp;
        try (DraftModel dm = b.load(model, backend.options);
             DraftRows rows = dm.openRows(Collections.singletonList(null))) {
            ChainData.PrefillArgs p = ChainData.prefill(seed, 1, tokens, vocab, h);
            rows.prefill(p.tokens(), p.context());
            SplittableRandom rnd = new SplittableRandom(seed ^ 0x5DEECE66DL);
            int pending = rnd.nextInt(vocab);
            for (int r = 0; r < rounds; r++) {
                int[][] drafted = rows.draft(new int[] {pending}, 2, new long[] {2L * r}, DraftSampling.greedy(1));
                rows.commit(new int[] {2}, ChainData.hiddens(rnd, 1, 3, h));
                pending = drafted[0][1];
            }
            cp = rows.capture(0);
        }
        CheckpointFiles.write(cp, out);
        System.out.printf("wrote %s: backend %s, P = %d, draftOffset = %d, model %s, content digest %s%n", out,
                b.name(), cp.processedTokens(), cp.draftOffset(), cp.modelIdentity(), cp.digest());
        return MtpCommand.EXIT_OK;
    }

    private static boolean sameFile(Path a, Path b) {
        try {
            return Files.isSameFile(a, b);
        } catch (java.io.IOException e) {
            return false; // one cannot be read: reading --seal says so
        }
    }
}
