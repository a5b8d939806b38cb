package org.mtporacle.api;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** The backend switch: every {@link MtpBackend} on the class path, by name. */
public final class MtpBackends {
    private MtpBackends() {
    }

    /** Every backend found by {@link ServiceLoader}, the reference first, then by name. */
    public static List<MtpBackend> all() {
        List<MtpBackend> out = new ArrayList<>();
        for (MtpBackend b : ServiceLoader.load(MtpBackend.class, MtpBackends.class.getClassLoader())) {
            out.add(b);
        }
        out.sort((a, b) -> a.name().equals("reference") ? -1 : b.name().equals("reference") ? 1
                : a.name().compareTo(b.name()));
        return out;
    }

    /**
     * The backend called {@code name}.
     *
     * @throws MtpException INVALID_ARGUMENT naming the known backends when there is none of that name
     */
    public static MtpBackend byName(String name) {
        List<MtpBackend> all = all();
        for (MtpBackend b : all) {
            if (b.name().equals(name)) {
                return b;
            }
        }
        throw MtpException.invalidArgument("backend: no backend named '" + name + "' (known: "
                + String.join(", ", all.stream().map(MtpBackend::name).toList()) + ")");
    }
}
