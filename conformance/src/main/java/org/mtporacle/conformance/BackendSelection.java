package org.mtporacle.conformance;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.api.MtpException;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Which backends a run holds to the reference, by the names a user gave: the policy every command shares. An unknown
 * name is an INVALID_ARGUMENT naming the known ones; a backend asked for by name and unavailable fails the run
 * (UNAVAILABLE), while a run with no names lists the unavailable ones and goes on.
 */
public final class BackendSelection {
    private BackendSelection() {
    }

    /** One backend profile to run. */
    public record Choice(MtpBackend backend, BackendProfile profile) {
        public String label() {
            return profile.label();
        }
    }

    /**
     * The profiles {@code names} select, in the order of {@link MtpBackends#all()}: a backend's name selects all its
     * profiles, a profile label ({@code mlx/native}) that one; no names select every profile of every backend.
     *
     * @throws MtpException INVALID_ARGUMENT for a name that is neither, listing the known ones
     */
    public static List<Choice> select(List<String> names) {
        List<MtpBackend> all = MtpBackends.all();
        Set<String> known = new LinkedHashSet<>();
        for (MtpBackend b : all) {
            known.add(b.name());
            b.profiles().forEach(p -> known.add(p.label()));
        }
        List<MtpBackend> extra = new ArrayList<>();
        for (String n : names) {
            if (!known.contains(n)) {
                extra.add(byName(n)); // a name the switch resolves without listing it, or INVALID_ARGUMENT
            }
        }
        List<Choice> out = new ArrayList<>();
        for (MtpBackend b : all) {
            for (BackendProfile p : b.profiles()) {
                if (names.isEmpty() || names.contains(b.name()) || names.contains(p.label())) {
                    out.add(new Choice(b, p));
                }
            }
        }
        for (MtpBackend b : extra) {
            b.profiles().forEach(p -> out.add(new Choice(b, p)));
        }
        return out;
    }

    /** The backend called {@code name}; INVALID_ARGUMENT naming the known ones when there is none. */
    public static MtpBackend byName(String name) {
        try {
            return MtpBackends.byName(name);
        } catch (MtpException e) {
            if (e.kind() != MtpException.Kind.INVALID_ARGUMENT) {
                throw e;
            }
            List<String> labels = new ArrayList<>();
            for (MtpBackend b : MtpBackends.all()) {
                labels.add(b.name());
                b.profiles().stream().map(BackendProfile::label).filter(l -> !l.equals(b.name())).forEach(labels::add);
            }
            throw MtpException.invalidArgument("--backend " + name + ": no such backend or profile (known: "
                    + String.join(", ", labels) + ", exec:COMMAND); a backend from a plug-in needs --plugin JAR or "
                    + "MTP_PLUGINS");
        }
    }

    /** Fails with UNAVAILABLE and the backend's reason when it cannot run here. */
    public static void requireAvailable(MtpBackend b) {
        Availability a = b.availability();
        if (!a.available()) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, "backend " + b.name() + " is unavailable: "
                    + a.reason());
        }
    }
}
