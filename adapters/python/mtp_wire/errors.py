"""The seven error kinds of the row contract (api MtpException.Kind) and the one exception a handler raises."""

INVALID_ARGUMENT = "INVALID_ARGUMENT"
ILLEGAL_STATE = "ILLEGAL_STATE"
INCOMPATIBLE_CHECKPOINT = "INCOMPATIBLE_CHECKPOINT"
INCOMPATIBLE_MODEL = "INCOMPATIBLE_MODEL"
MALFORMED_FILE = "MALFORMED_FILE"
UNAVAILABLE = "UNAVAILABLE"
BACKEND_FAILURE = "BACKEND_FAILURE"

KINDS = (INVALID_ARGUMENT, ILLEGAL_STATE, INCOMPATIBLE_CHECKPOINT, INCOMPATIBLE_MODEL, MALFORMED_FILE, UNAVAILABLE,
         BACKEND_FAILURE)


class MtpError(Exception):
    """A contract failure: one of KINDS, a message `operation: what is wrong, actual vs expected (spec §)`, and
    whether the group it happened in can no longer be trusted (poisoned: every later call fails)."""

    def __init__(self, kind, message, poisoned=False):
        if kind not in KINDS:
            raise ValueError("MtpError: unknown kind %r, expected one of %s" % (kind, ", ".join(KINDS)))
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.poisoned = bool(poisoned)

    def __str__(self):
        return "%s: %s" % (self.kind, self.message)


def invalid_argument(message):
    return MtpError(INVALID_ARGUMENT, message)


def illegal_state(message):
    return MtpError(ILLEGAL_STATE, message)


def incompatible_checkpoint(message):
    return MtpError(INCOMPATIBLE_CHECKPOINT, message)


def incompatible_model(message):
    return MtpError(INCOMPATIBLE_MODEL, message)


def malformed_file(message):
    return MtpError(MALFORMED_FILE, message)
