"""Shared test helpers: paths, the external transformers reference, a small wire client."""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(ADAPTER))
EXAMPLES = os.path.join(ADAPTER, "examples")
EXTERNAL = os.path.join(REPO, "reference", "src", "test", "data", "qwen35-mtp-transformers")
EXTERNAL_MOE = os.path.join(REPO, "reference", "src", "test", "data", "qwen35-moe-mtp-transformers")

for p in (ADAPTER, EXAMPLES):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy_backend as nb  # noqa: E402
from mtp_wire import RowSampler, Tensor  # noqa: E402
from mtp_wire.server import read_frame, write_frame  # noqa: E402

GREEDY = RowSampler(0.0, 0, 1.0, 0)


def external(variant, root=EXTERNAL):
    """(model directory, expected tensors as numpy) of the external float64 transformers reference (dense, or the
    MoE one with root=EXTERNAL_MOE)."""
    d = os.path.join(root, variant)
    ex = {k: v[2] for k, v in nb.read_safetensors(os.path.join(d, "inputs-and-expected.safetensors")).items()}
    return d, ex


def f32(a):
    return Tensor.from_numpy(np.asarray(a, dtype=np.float32))


def i32(a):
    return Tensor.from_numpy(np.asarray(a, dtype=np.int32))


class WireClient:
    """The runner's side of mtp-oracle-wire/1, enough to drive an engine in tests."""

    def __init__(self, argv, env=None, cwd=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, cwd=cwd)
        self.next_id = 1

    def call(self, op, args=None, tensors=()):
        rid = self.next_id
        self.next_id += 1
        write_frame(self.p.stdin, {"id": rid, "op": op, "args": args or {}}, tensors)
        frame = read_frame(self.p.stdout)
        assert frame is not None, "engine closed stdout; stderr: " + self.p.stderr.read().decode()
        header, out = frame
        assert header["id"] == rid, header
        return header, out

    def ok(self, op, args=None, tensors=()):
        header, out = self.call(op, args, tensors)
        assert header["ok"], header
        return header["result"], out

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=10)
        self.p.stdout.close()
        self.p.stderr.close()
        return self.p.returncode


def hello_args():
    return {"protocols": ["mtp-oracle-wire/1"], "runner": "tests"}


def dumps(x):
    return json.dumps(x)
