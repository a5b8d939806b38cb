package org.mtporacle.wire;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackendFactory;

/** {@code exec:COMMAND ARGS}: an engine in another process over {@code mtp-oracle-wire/1} (WIRE.md). */
public final class ExecBackendFactory implements MtpBackendFactory {
    @Override
    public String scheme() {
        return "exec";
    }

    @Override
    public String usage() {
        return "exec:'COMMAND ARGS' (an engine speaking " + WireFrame.PROTOCOL + ", conformance/WIRE.md)";
    }

    @Override
    public MtpBackend create(String argument) {
        return new ExecBackend(argument, ExecBackend.configuredTimeout());
    }
}
