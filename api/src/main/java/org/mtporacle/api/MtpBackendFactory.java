package org.mtporacle.api;

/**
 * Makes backends whose name carries an argument, {@code SCHEME:ARGUMENT} (for example
 * {@code exec:python3 engine.py}, an engine in another process). Discovered with {@link java.util.ServiceLoader};
 * {@link MtpBackends#byName} routes every name with a known scheme to its factory.
 */
public interface MtpBackendFactory {

    /** The scheme before the colon ({@code "exec"}). */
    String scheme();

    /** One line for listings: the syntax of the argument. */
    String usage();

    /**
     * The backend for {@code argument} (the text after {@code SCHEME:}); does no work beyond parsing.
     *
     * @throws MtpException INVALID_ARGUMENT when the argument cannot be parsed
     */
    MtpBackend create(String argument);
}
