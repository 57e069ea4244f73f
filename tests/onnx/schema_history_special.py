"""Schema-history cases of the ops a800c imports specially: random draws (checked by their
properties), the integer quantization ops, control flow and the signal ops."""
import numpy as np

from schema_history_kit import F32, I64, U8, Case, data, init, rnd, uints

QUANT = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
         "ConvInteger", "QLinearMatMul", "QLinearConv"}
CONTROL_FLOW = {"If", "Loop", "Scan"}
SIGNAL = {"DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"}
# Ops whose outputs are random draws: schema_history_test.py checks them by properties
# (random_outputs.check_op) instead of against onnxruntime's values.
RANDOM = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli"}


def build_random(op, v):
    """4096 draws each, enough for the moment checks."""
    if op == "RandomUniform":
        return Case([], {"shape": [64, 64], "low": -1.0, "high": 3.0})
    if op == "RandomNormal":
        return Case([], {"shape": [64, 64], "mean": 0.5, "scale": 2.0, "dtype": 11})
    if op == "RandomUniformLike":
        return Case([data(rnd(64, 64, seed=60))], {"low": 2.0, "high": 5.0})
    if op == "RandomNormalLike":
        return Case([data(rnd(64, 64, seed=61).astype(np.float64))], {"mean": -1.0, "scale": 0.5})
    p = rnd(64, 64, lo=0.0, hi=1.0, seed=62)
    p[0, :8], p[1, :8] = 0.0, 1.0  # exact draws
    return Case([data(p)], {"dtype": 11} if v >= 15 else {})


def build_signal(op, v):
    """DFT-17 (complex, along axis 1), DFT-20 (real, zero-padded to 10, onesided), STFT-17 with a
    window, the windows (symmetric, size from an int32 constant)."""
    if op == "DFT" and v < 20:
        return Case([data(rnd(2, 8, 2, seed=84))], {"axis": 1})
    if op == "DFT":
        return Case([data(rnd(2, 8, 1, seed=85)), init(np.array(10, I64)),
                     init(np.array(-2, I64))], {"onesided": 1})
    if op == "STFT":
        window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8)).astype(F32)
        return Case([data(rnd(1, 32, 1, seed=86)), init(np.array(4, I64)), init(window)],
                    {"onesided": 1})
    if op == "MelWeightMatrix":
        i32 = np.int32
        return Case([init(np.array(8, i32)), init(np.array(16, i32)), init(np.array(8192, i32)),
                     init(np.array(0, F32)), init(np.array(4096, F32))])
    return Case([init(np.array(10, np.int32))], {"periodic": 0})


def build_control_flow(op, v):
    """If on a constant cond, Loop with a constant trip count, Scan (Scan-8's batch form, and
    from 11 on a scan axis of 1 and a reverse direction): the bodies read an outer value."""
    from onnx import TensorProto, helper, numpy_helper

    def tensor(name, shape, t=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, t, shape)

    if op == "If":  # one input, cond: the branches make constants (the harness feeds only it)
        def branch(name, seed):
            value = numpy_helper.from_array(rnd(2, 3, seed=seed), name)
            return helper.make_graph([helper.make_node("Constant", [], [name], value=value)],
                                     name, [], [tensor(name, [2, 3])])
        return Case([init(np.array(v % 2 == 1))],
                    {"then_branch": branch("t", 80), "else_branch": branch("e", 81)})
    if op == "Loop":
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c_out"]),
             helper.make_node("Add", ["s", "in2"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "s"], ["scan"])], "body",
            [tensor("i", [], TensorProto.INT64), tensor("c", [], TensorProto.BOOL),
             tensor("s", [2, 3])],
            [tensor("c_out", [], TensorProto.BOOL), tensor("s_out", [2, 3]), tensor("scan", [2, 3])])
        return Case([init(np.array(3, I64)), init(np.array(True)), data(rnd(2, 3, seed=81))],
                    {"body": body}, outputs=2)
    state, x = [1, 2] if v < 9 else [2], [2]
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "x"], ["o"])], "body",
        [tensor("s", [2]), tensor("x", x)], [tensor("s_out", [2]), tensor("o", [2])])
    if v < 9:
        return Case([(None, False), data(rnd(1, 2, seed=82)), data(rnd(1, 3, 2, seed=83))],
                    {"body": body, "num_scan_inputs": 1, "directions": [1]}, outputs=2)
    attrs = {"body": body, "num_scan_inputs": 1, "scan_input_directions": [1]}
    if v < 11:
        return Case([data(rnd(*state, seed=82)), data(rnd(3, 2, seed=83))], attrs, outputs=2)
    attrs.update({"scan_input_axes": [1], "scan_output_axes": [-1],
                  "scan_output_directions": [1]})
    return Case([data(rnd(*state, seed=82)), data(rnd(2, 3, seed=83))], attrs, outputs=2)


def build_quant(op, v):
    """The integer quantization ops (imported as decompositions: import_decompose_quant*.cc)."""
    f = F32
    if op == "QuantizeLinear":
        if v < 13:  # per tensor only
            return Case([data(rnd(2, 3, 4, seed=60, lo=-40, hi=40)), init(np.array(0.25, f)),
                         init(np.array(7, U8))])
        return Case([data(rnd(2, 3, 4, seed=60, lo=-40, hi=40)), init(np.array([0.25, 0.5, 1], f)),
                     init(np.array([7, 130, 255], U8))], {"axis": 1})
    if op == "DequantizeLinear":
        x = uints(2, 3, 4, seed=61, dtype=np.int8, lo=-128, hi=127)
        if v < 13:
            return Case([data(x), init(np.array(0.25, f)), init(np.array(-3, np.int8))])
        return Case([data(x), init(np.array([0.25, 0.5, 1.5], f)),
                     init(np.array([-3, 0, 100], np.int8))], {"axis": 1})
    if op == "DynamicQuantizeLinear":
        return Case([data(rnd(2, 3, 4, seed=62, lo=-3, hi=5))], outputs=3)
    if op == "MatMulInteger":
        return Case([data(uints(2, 3, seed=63)), data(uints(3, 4, seed=64)),
                     init(np.array(12, U8)), init(np.array(200, U8))])
    if op == "QLinearMatMul":
        return Case([data(uints(2, 3, seed=63)), init(np.array(0.05, f)), init(np.array(12, U8)),
                     data(uints(3, 4, seed=64)), init(np.array(0.02, f)), init(np.array(200, U8)),
                     init(np.array(0.4, f)), init(np.array(100, U8))])
    if op == "ConvInteger":
        return Case([data(uints(1, 2, 5, 5, seed=65)), init(uints(3, 2, 3, 3, seed=66)),
                     init(np.array(100, U8))], {"pads": [1, 1, 1, 1], "strides": [1, 2]})
    if op == "QLinearConv":
        return Case([data(uints(1, 2, 5, 5, seed=65)), init(np.array(0.05, f)),
                     init(np.array(100, U8)), init(uints(3, 2, 3, 3, seed=66)),
                     init(np.array([0.01, 0.02, 0.03], f)), init(np.array(128, U8)),
                     init(np.array(0.5, f)), init(np.array(5, U8)),
                     init(np.array([-300, 0, 2000], np.int32))],
                    {"pads": [1, 1, 1, 1], "strides": [1, 2]})
    return None
