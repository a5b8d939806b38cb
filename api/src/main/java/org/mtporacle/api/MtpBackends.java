package org.mtporacle.api;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** The backend switch: every {@link MtpBackend} on the class path, by name. */
public final class MtpBackends {
    private MtpBackends() {
    }

    /**
     * Every backend found by {@link ServiceLoader}, the reference first, then by name: through the calling thread's
     * context class loader when it sees this API (the {@code mtp} command puts {@code --plugin} jars there), else
     * through this class's own.
     */
    public static List<MtpBackend> all() {
        List<MtpBackend> out = new ArrayList<>();
        for (MtpBackend b : ServiceLoader.load(MtpBackend.class, loader())) {
            out.add(b);
        }
        out.sort((a, b) -> a.name().equals("reference") ? -1 : b.name().equals("reference") ? 1
                : a.name().compareTo(b.name()));
        return out;
    }

    private static ClassLoader loader() {
        ClassLoader own = MtpBackends.class.getClassLoader();
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        if (context == null || context == own) {
            return own;
        }
        try {
            return Class.forName(MtpBackend.class.getName(), false, context) == MtpBackend.class ? context : own;
        } catch (ClassNotFoundException e) {
            return own;
        }
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
