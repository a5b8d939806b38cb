"""mtp_wire: write an MTP engine in Python and have the MTP Oracle kit (mtp tck, mtp conform, mtp replay) drive it
over the protocol mtp-oracle-wire/1 (conformance/WIRE.md). Stdlib + numpy; Python 3.10+.

    from mtp_wire import Engine, DraftModel, DraftRows, Checkpoint, MtpError, Tensor, serve

Subclass Engine (hello_result, load), DraftModel (open_rows) and DraftRows (the contract calls), then call
serve(MyEngine()); or subclass the skeletons, RowsSkeleton (the drafter) and TargetRowsSkeleton (the hybrid target),
with your storage and maths, and call serve_rows. See README.md."""

from .errors import (BACKEND_FAILURE, ILLEGAL_STATE, INCOMPATIBLE_CHECKPOINT, INCOMPATIBLE_MODEL, INVALID_ARGUMENT,
                     KINDS, MALFORMED_FILE, UNAVAILABLE, MtpError)
from .server import PROTOCOL, Checkpoint, DraftModel, DraftRows, Engine, RowSampler, checkpoint_digest, serve
from .target import (TARGET_SCHEMA, TargetCheckpoint, TargetModel, TargetRows,  # WIRE.md §5.2, the target capability
                     target_checkpoint_digest)
from .tensor import Tensor

__all__ = ["BACKEND_FAILURE", "ILLEGAL_STATE", "INCOMPATIBLE_CHECKPOINT", "INCOMPATIBLE_MODEL", "INVALID_ARGUMENT",
           "KINDS", "MALFORMED_FILE", "UNAVAILABLE", "MtpError", "PROTOCOL", "Checkpoint", "DraftModel", "DraftRows",
           "Engine", "RowSampler", "checkpoint_digest", "serve", "Tensor", "TARGET_SCHEMA", "TargetCheckpoint",
           "TargetModel", "TargetRows", "target_checkpoint_digest"]

# the row skeleton (rows.py): subclass RowsSkeleton with storage and maths, serve it with serve_rows (see README.md)
from .rows import LoadArgs, RowShape, RowState, RowsEngine, RowsSkeleton, serve_rows  # noqa: E402

__all__ += ["LoadArgs", "RowShape", "RowState", "RowsEngine", "RowsSkeleton", "serve_rows"]

# the target row skeleton (target_rows.py): subclass TargetRowsSkeleton, serve it with serve_rows(load_target=…,
# target_rows=…) beside the drafter
from .target_rows import Forwarded, TargetRowState, TargetRowsSkeleton, TargetShape  # noqa: E402

__all__ += ["Forwarded", "TargetRowState", "TargetRowsSkeleton", "TargetShape"]
