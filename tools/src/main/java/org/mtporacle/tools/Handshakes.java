package org.mtporacle.tools;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.wire.ExecBackend;

import java.util.Collection;

/**
 * The check a run makes before its first rule or chain: an {@code exec:} engine that cannot be started is unavailable
 * ("cannot run here"), and one that cannot answer {@code hello} fails once; either is one line and exit 3, never a
 * failure per rule or per fixture (WIRE.md §4).
 */
final class Handshakes {
    private Handshakes() {
    }

    /** Fails with UNAVAILABLE or BACKEND_FAILURE on the first {@code exec:} backend that cannot run or shake hands. */
    static void require(Collection<MtpBackend> backends) {
        for (MtpBackend b : backends) {
            if (b instanceof ExecBackend e) {
                BackendSelection.requireAvailable(e);
                e.requireHandshake();
            }
        }
    }
}
