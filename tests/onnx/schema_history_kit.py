"""The pieces every schema-history case is made of (schema_history_cases.py builds them)."""
import numpy as np

F32 = np.float32
I64 = np.int64
U8 = np.uint8


class Case:
    def __init__(self, inputs, attrs=None, outputs=1):
        # inputs: list of (array or None, is_initializer); None is an absent optional input.
        self.inputs = inputs
        self.attrs = attrs or {}
        self.outputs = outputs


def rnd(*shape, lo=-2.0, hi=2.0, seed=0, dtype=F32):
    rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def data(a):
    return (a, False)


def init(a):
    return (np.asarray(a), True)


def ints(v):
    return init(np.array(v, dtype=I64))


def uints(*shape, seed=0, dtype=U8, lo=0, hi=255):
    return np.random.default_rng(seed).integers(lo, hi + 1, size=shape).astype(dtype)
