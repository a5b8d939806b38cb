package org.example.mtp;

import java.util.Map;
import org.mtporacle.api.Availability;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;

/**
 * The backend's entry point, found through {@code META-INF/services/org.mtporacle.api.MtpBackend}: a name users
 * type ({@code --backend example}), an availability probe that does no work, and {@code load}.
 */
public final class ExampleBackend implements MtpBackend {
    @Override
    public String name() {
        return "example";
    }

    @Override
    public String description() {
        return "template backend for authors (examples/backend-template)";
    }

    @Override
    public Availability availability() {
        return Availability.yes("pure Java, in-process");
    }

    @Override
    public DraftModel load(MtpModel model, Map<String, String> options) {
        if (!options.isEmpty()) {
            throw MtpException.invalidArgument("load: unknown options " + options.keySet() + " (example has none)");
        }
        return new ExampleDraftModel(model);
    }
}
