#!/usr/bin/env python3
"""A second, independent implementation of the Qwen3.5 MTP draft block and its row lifecycle, and of the hybrid
target (Gated DeltaNet + gated attention, verify and rollback: numpy_mtp/target.py), in numpy float64,
written from conformance/spec/mtp-behavior.md (cited as §N) and conformance/SPEC.md (the seeded sampling stream),
served over mtp-oracle-wire/1 with the mtp_wire SDK:

    mtp tck --backend exec:'python3 adapters/python/examples/numpy_backend.py'

Everything is computed in float64 from the stored weights (BF16/F16/F32 widen exactly; MLX affine weights are
dequantized in float64); log-probs are rounded to float32 before sampling, as SPEC.md §6 takes them. Checkpoints are
F32. Each row owns an unpadded KV cache, so a row's result never depends on the other rows (§11.10).
The engine claims the `f32` tolerance profile.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mtp_wire  # noqa: E402
from mtp_wire import errors as E  # noqa: E402
from numpy_mtp.block import Block, RowCache, rms_norm, sigmoid  # noqa: E402,F401
from numpy_mtp.modelfiles import (ATTENTION_LINEARS, EMBED_NAMES, HEAD_NAMES, LINEARS, NORMS, Config, Quant, Weights,  # noqa: E402,F401
                                  dequantize, load_model, read_json, read_safetensors)
from numpy_mtp.moe import MoeMlp, softmax_f32, top_k  # noqa: E402,F401
from numpy_mtp.rows import MAX_DEPTH, MIN_TEMPERATURE, SCHEMA, Model, Row, Rows  # noqa: E402,F401
from numpy_mtp.target import HybridTarget, TargetGroup  # noqa: E402
from numpy_mtp.sampling import (_ONE_BELOW, gumbel, inverse_cdf, key_of, mlx_exp, random_bits,  # noqa: E402,F401
                                sample_row, step_key, threefry2x32, uniform)

ENGINE_NAME = "numpy-mtp"
ENGINE_VERSION = "1.0"
NUMERICS = "numpy float64 (weights widened exactly, affine dequantized in float64; float32 log-probs for sampling)"


# ---------------------------------------------------------------------------------------------------------------
# the wire handler

class NumpyEngine(mtp_wire.Engine):
    name = ENGINE_NAME
    version = ENGINE_VERSION

    def hello_result(self):
        return {
            "description": "numpy float64 Qwen3.5 MTP block and row lifecycle, written from the spec",
            "numerics": NUMERICS,
            "profiles": [{"label": "numpy-f64", "options": {},
                          "tolerance": {"name": "f32", "tokenGap": 1e-4, "kvNmse": 1e-9, "hiddenNmse": 0}}],
            "capabilities": {
                "seededSampling": True,
                "tapDtypes": ["F32", "F16", "BF16"],
                "weightDtypes": ["F32", "F16", "BF16"],
                "quantization": [{"bits": b, "groupSizes": [32, 64, 128]} for b in (2, 3, 4, 5, 6, 8)],
                "layouts": ["hf", "companion"],
                "maxRows": 64,
                "maxDepth": MAX_DEPTH,
                "routerChoices": True,
                "target": True,
                "targetRouterChoices": True,
            },
        }

    def load(self, directory, layout, identity, options, config):
        if options:
            raise E.invalid_argument("load: unknown option(s) %s; this engine takes none"
                                     % ", ".join(sorted(map(str, options))))
        if not isinstance(directory, str):
            raise E.invalid_argument("load: directory = %r, expected a path" % (directory,))
        return WireModel(Model(directory, identity))

    def load_target(self, directory, layout, identity, options, config):
        """The hybrid target (spec §13, WIRE.md §5.2), numpy float64, recurrent form; see numpy_mtp/target.py."""
        if options:
            raise E.invalid_argument("loadTarget: unknown option(s) %s; this engine takes none"
                                     % ", ".join(sorted(map(str, options))))
        return WireTarget(HybridTarget(directory, identity))


class WireTarget(mtp_wire.TargetModel):
    numerics = NUMERICS

    def __init__(self, target):
        self.target = target
        self.closed = False

    def open_rows(self, checkpoints):
        g = TargetGroup(self.target, lambda: self.closed)
        g.append(checkpoints)
        return g

    def close(self):
        self.closed = True


class WireModel(mtp_wire.DraftModel):
    numerics = NUMERICS

    def __init__(self, model):
        self.model = model

    def open_rows(self, checkpoints):
        return WireRows(self.model.open_rows(checkpoints))


class WireRows(mtp_wire.DraftRows):
    """The SDK's handler names over Rows."""

    def __init__(self, rows):
        self.r = rows

    def row_count(self):
        return self.r.row_count()

    def append(self, checkpoints):
        self.r.append(checkpoints)

    def filter_rows(self, keep):
        self.r.filter_rows(keep)

    def prefill(self, tokens, context):
        self.r.prefill(tokens, context)

    def draft(self, pending, depth, steps, sampling):
        return self.r.draft(pending, depth, steps, sampling)

    def commit(self, accepted, context):
        self.r.commit(accepted, context)

    def capture(self, row):
        return self.r.capture(row)

    def close(self):
        self.r.close()

    def router_choices(self):
        return self.r.choices


def main(argv):
    if len(argv) > 1:
        sys.stderr.write("usage: numpy_backend.py   (speaks mtp-oracle-wire/1 on stdin/stdout)\n")
        return 2
    return mtp_wire.serve(NumpyEngine())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
