package org.mtporacle.api;

/** Whether a backend can run here and, when it cannot, why and how to fix it. */
public record Availability(boolean available, String reason) {
    public static Availability yes(String detail) {
        return new Availability(true, detail);
    }

    public static Availability no(String reason) {
        return new Availability(false, reason);
    }
}
