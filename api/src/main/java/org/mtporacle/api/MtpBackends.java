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
     * The backend called {@code name}; a name {@code SCHEME:ARGUMENT} goes to the {@link MtpBackendFactory} of that
     * scheme (a new backend each call).
     *
     * @throws MtpException INVALID_ARGUMENT naming the known backends when there is none of that name
     */
    public static MtpBackend byName(String name) {
        MtpBackend made = fromFactory(name);
        if (made != null) {
            return made;
        }
        List<MtpBackend> all = all();
        for (MtpBackend b : all) {
            if (b.name().equals(name)) {
                return b;
            }
        }
        List<String> known = new ArrayList<>(all.stream().map(MtpBackend::name).toList());
        factories().forEach(f -> known.add(f.usage()));
        throw MtpException.invalidArgument("backend: no backend named '" + name + "' (known: "
                + String.join(", ", known) + ")");
    }

    /** True when {@code name} has the form {@code SCHEME:ARGUMENT} of a known {@link MtpBackendFactory}. */
    public static boolean isFactoryName(String name) {
        int colon = name.indexOf(':');
        return colon > 0 && factories().stream().anyMatch(f -> f.scheme().equals(name.substring(0, colon)));
    }

    /** Every {@link MtpBackendFactory} on the class path. */
    public static List<MtpBackendFactory> factories() {
        List<MtpBackendFactory> out = new ArrayList<>();
        for (MtpBackendFactory f : ServiceLoader.load(MtpBackendFactory.class, loader())) {
            out.add(f);
        }
        return out;
    }

    private static MtpBackend fromFactory(String name) {
        int colon = name.indexOf(':');
        if (colon <= 0) {
            return null;
        }
        String scheme = name.substring(0, colon);
        for (MtpBackendFactory f : factories()) {
            if (f.scheme().equals(scheme)) {
                return f.create(name.substring(colon + 1));
            }
        }
        return null;
    }
}
