package org.mtporacle.tools;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.function.IntSupplier;
import java.util.jar.JarFile;

/**
 * Backends from outside the tool: jars (or class folders) named by {@code --plugin} and by {@code MTP_PLUGINS}
 * ({@link File#pathSeparator}-separated), each listing its backends in {@value #SERVICES}. They are put on a class
 * loader above the tool's for the duration of one command, as the thread's context class loader, through which
 * {@link org.mtporacle.api.MtpBackends} finds them.
 */
final class Plugins {
    static final String SERVICES = "META-INF/services/org.mtporacle.api.MtpBackend";
    static final String ENV = "MTP_PLUGINS";

    private Plugins() {
    }

    /** The {@code --plugin} paths, then those of the {@code MTP_PLUGINS} value ({@code env} may be null). */
    static List<Path> paths(List<Path> options, String env) {
        List<Path> out = new ArrayList<>(options);
        if (env != null) {
            for (String p : env.split(File.pathSeparator)) {
                if (!p.isBlank()) {
                    out.add(Path.of(p.strip()));
                }
            }
        }
        return out;
    }

    /**
     * Runs {@code command} with the backends of {@code paths} visible; with no paths, runs it as it is.
     *
     * @throws MtpException INVALID_ARGUMENT naming the path when one is missing, unreadable or lists no backend;
     *                      nothing runs then
     */
    static int run(List<Path> paths, IntSupplier command) {
        if (paths.isEmpty()) {
            return command.getAsInt();
        }
        URL[] urls = new URL[paths.size()];
        java.util.Set<String> known = ownNames();
        for (int i = 0; i < urls.length; i++) {
            urls[i] = check(paths.get(i));
            checkProviders(paths.get(i), urls[i], known);
        }
        Thread t = Thread.currentThread();
        ClassLoader saved = t.getContextClassLoader();
        try (URLClassLoader loader = new URLClassLoader("mtp-plugins", urls, MtpBackend.class.getClassLoader())) {
            t.setContextClassLoader(loader);
            return command.getAsInt();
        } catch (IOException e) {
            throw new UncheckedIOException("plugin: closing the plugin class loader failed", e);
        } finally {
            t.setContextClassLoader(saved);
        }
    }

    /**
     * Instantiates every backend {@code p} lists and asks what the tool asks of every backend before a command — its
     * name, description, availability, profiles and capabilities — on a loader of its own, so a broken plug-in is
     * refused here, naming the jar and the class, instead of failing later inside a command.
     *
     * @param known the names of the backends already found (the tool's, earlier plug-ins'); this plug-in's are added
     * @throws MtpException INVALID_ARGUMENT when a listed class is missing or cannot be instantiated, one of those
     *                      methods throws (an exception or an error such as {@code NoClassDefFoundError}) or returns
     *                      null, or the name is blank, is not one printable word, or is taken
     */
    private static void checkProviders(Path p, URL url, java.util.Set<String> known) {
        String where = "plugin: " + UntrustedText.path(p) + " (--plugin / " + ENV + ")";
        try (URLClassLoader own = new URLClassLoader("mtp-plugin-check", new URL[] {url},
                MtpBackend.class.getClassLoader())) {
            var it = ServiceLoader.load(MtpBackend.class, own).stream().iterator();
            while (true) {
                ServiceLoader.Provider<MtpBackend> provider;
                MtpBackend b;
                try {
                    if (!it.hasNext()) {
                        return;
                    }
                    provider = it.next();
                    if (provider.type().getClassLoader() != own) {
                        continue; // one of the tool's own backends, seen through the parent
                    }
                    b = provider.get();
                } catch (ServiceConfigurationError e) {
                    // a plug-in's class is code of its own: its failure to load is bad input naming it, never a crash
                    throw MtpException.invalidArgument(where + ": a listed backend cannot be instantiated: "
                            + e.getMessage() + (e.getCause() == null ? "" : " (" + e.getCause() + ")"));
                }
                String cls = provider.type().getName();
                String name = (String) ask(where, cls, "name()", b::name);
                if (name.isBlank() || !UntrustedText.line(name).equals(name) || name.chars().anyMatch(
                        Character::isWhitespace)) {
                    throw MtpException.invalidArgument(where + ": " + cls + ".name() is " + UntrustedText.quote(name)
                            + ", not one printable word (a backend is named on the command line by it)");
                }
                if (!known.add(name)) {
                    throw MtpException.invalidArgument(where + ": " + cls + ".name() is " + UntrustedText.quote(name)
                            + ", the name of another backend found (see mtp backends without this plug-in)");
                }
                ask(where, cls, "description()", b::description);
                ask(where, cls, "availability()", b::availability);
                ask(where, cls, "profiles()", b::profiles);
                ask(where, cls, "capabilities()", b::capabilities);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("plugin: closing the plugin check's class loader failed", e);
        }
    }

    /** The names of the tool's own backends (those on its class path). */
    private static java.util.Set<String> ownNames() {
        java.util.Set<String> names = new java.util.HashSet<>();
        for (MtpBackend b : ServiceLoader.load(MtpBackend.class, MtpBackend.class.getClassLoader())) {
            names.add(b.name());
        }
        return names;
    }

    /**
     * {@code call()} of a plug-in's backend, which must neither throw nor return null: a plug-in's failure is bad input
     * naming the jar, the class and the method. An error of the plug-in's own code ({@code NoClassDefFoundError} for a
     * dependency it lacks, {@code StackOverflowError}) counts; one of the JVM itself (out of memory) does not.
     */
    private static Object ask(String where, String cls, String method, java.util.function.Supplier<?> call) {
        Object v;
        try {
            v = call.get();
        } catch (RuntimeException | LinkageError | StackOverflowError | AssertionError e) {
            throw MtpException.invalidArgument(where + ": " + cls + "." + method + " threw " + e);
        }
        if (v == null) {
            throw MtpException.invalidArgument(where + ": " + cls + "." + method + " returned null");
        }
        return v;
    }

    private static URL check(Path p) {
        String where = p + " (--plugin / " + ENV + ")";
        boolean listed;
        if (Files.isDirectory(p)) {
            listed = Files.isRegularFile(p.resolve(SERVICES));
        } else if (Files.isRegularFile(p)) {
            try (JarFile jar = new JarFile(p.toFile())) {
                listed = jar.getEntry(SERVICES) != null;
            } catch (IOException e) {
                throw MtpException.invalidArgument("plugin: " + where + " is not a readable jar: " + e.getMessage());
            }
        } else {
            throw MtpException.invalidArgument("plugin: no such jar or folder " + where);
        }
        if (!listed) {
            throw MtpException.invalidArgument("plugin: " + where + " lists no backend: " + SERVICES
                    + " is missing — list your MtpBackend class there");
        }
        try {
            return p.toAbsolutePath().toUri().toURL();
        } catch (MalformedURLException e) {
            throw MtpException.invalidArgument("plugin: " + where + " has no URL form: " + e.getMessage());
        }
    }
}
