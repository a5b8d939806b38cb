package org.mtporacle.tools;

import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;

/** {@code mtp completion}: picocli's bash (and zsh) completion script for every command and option. */
@Command(name = "completion", mixinStandardHelpOptions = true,
        description = {"Print a bash/zsh completion script for mtp, its commands and options.",
                "For this shell: source <(./mtp completion)",
                "For every shell: ./mtp completion > ~/.local/share/bash-completion/completions/mtp"})
final class CompletionCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        System.out.print(AutoComplete.bash("mtp", spec.root().commandLine()));
        return MtpCommand.EXIT_OK;
    }
}
