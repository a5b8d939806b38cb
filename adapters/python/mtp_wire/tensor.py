"""Host tensors as they cross the wire: a dtype name (the safetensors names: F64 F32 F16 BF16 I64 I32 I16 I8 U32 U16
U8 BOOL), a shape and little-endian row-major bytes. A handler gets them exactly as the runner sent them, so that it
can validate dtypes and shapes itself; `array()` widens to numpy (BF16 exactly to float32)."""

import numpy as np

_NUMPY = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?", "BF16": "<u2",
}
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U32": 4, "U16": 2,
         "U8": 1, "BOOL": 1}
FLOATING = ("F64", "F32", "F16", "BF16")


def bf16_to_f32(raw_u16):
    """bfloat16 bit patterns (uint16) to float32, exactly."""
    return (np.asarray(raw_u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values):
    """float32 to bfloat16 bit patterns, round to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


class Tensor:
    """dtype (str), shape (tuple of int) and data (bytes, little-endian, row-major)."""

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype, shape, data):
        if dtype not in SIZES:
            raise ValueError("tensor: unknown dtype %r" % (dtype,))
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError("tensor: negative dimension in %s" % (list(shape),))
        n = 1
        for s in shape:
            n *= s
        nbytes = data.nbytes if isinstance(data, memoryview) else len(data)
        if nbytes != n * SIZES[dtype]:
            raise ValueError("tensor: %d bytes for %s %s, expected %d" % (nbytes, dtype, list(shape),
                                                                          n * SIZES[dtype]))
        self.dtype = dtype
        self.shape = shape
        self.data = data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data)

    @staticmethod
    def from_numpy(array, dtype=None):
        """A tensor holding `array`; `dtype` names the wire dtype (default from the array; "BF16" rounds float32)."""
        a = np.asarray(array)
        if dtype is None:
            dtype = {np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
                     np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
                     np.dtype("int8"): "I8", np.dtype("uint32"): "U32", np.dtype("uint16"): "U16",
                     np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL"}[a.dtype]
        if dtype == "BF16":
            raw = f32_to_bf16(a.astype(np.float32))
        else:
            raw = np.ascontiguousarray(a, dtype=_NUMPY[dtype])
        return Tensor(dtype, a.shape, raw.tobytes())

    @property
    def nbytes(self):
        return self.size * SIZES[self.dtype]

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_floating(self):
        return self.dtype in FLOATING

    def raw(self):
        """The elements in the dtype's own numpy type (BF16 as uint16 bit patterns), shaped."""
        return np.frombuffer(self.data, dtype=_NUMPY[self.dtype]).reshape(self.shape)

    def array(self):
        """The elements as numpy: floats widened exactly (BF16 -> float32), integers as they are."""
        r = self.raw()
        if self.dtype == "BF16":
            return bf16_to_f32(r).reshape(self.shape)
        return r

    def describe(self):
        return "%s %s" % (self.dtype, list(self.shape))

    def __repr__(self):
        return "Tensor(%s)" % self.describe()
