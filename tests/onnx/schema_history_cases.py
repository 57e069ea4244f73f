"""One small model per (op, since_version) for schema_history_test.py.

`build(op, version)` returns a Case: the node's inputs (graph inputs fed with data, or
initializers, which a800c needs for shape-like operands), its attributes and its output count,
in the form that version of the op takes. Old versions use their legacy forms on purpose
(broadcast/axis attributes, attributes that later became inputs, Softmax's 2-D coercion at an
inner axis, Dropout-7's typed mask), since those are what the upgrader must get right.
"""
import numpy as np

from schema_history_kit import F32, I64, Case, data, init, ints, rnd
from schema_history_special import (CONTROL_FLOW, QUANT, RANDOM, SIGNAL, build_control_flow,
                                    build_quant, build_random, build_signal)


# Unary float ops: the input range each one is defined on.
UNARY = {
    "Abs": (-2, 2), "Neg": (-2, 2), "Exp": (-2, 2), "Log": (0.5, 3), "Sqrt": (0.5, 3),
    "Reciprocal": (0.5, 3), "Floor": (-3, 3), "Ceil": (-3, 3), "Sin": (-3, 3), "Cos": (-3, 3),
    "Tan": (-1, 1), "Asin": (-0.9, 0.9), "Acos": (-0.9, 0.9), "Atan": (-3, 3),
    "Sinh": (-2, 2), "Cosh": (-2, 2), "Asinh": (-2, 2), "Acosh": (1.1, 3),
    "Atanh": (-0.9, 0.9), "Erf": (-2, 2), "Round": (-3, 3), "Sigmoid": (-3, 3),
    "Tanh": (-3, 3), "Relu": (-2, 2), "Softplus": (-2, 2), "Softsign": (-2, 2),
    "Mish": (-2, 2), "HardSwish": (-4, 4), "Selu": (-2, 2), "Elu": (-2, 2),
    "LeakyRelu": (-2, 2), "HardSigmoid": (-4, 4), "ThresholdedRelu": (-2, 2), "Celu": (-2, 2),
    "Shrink": (-2, 2), "Gelu": (-2, 2), "Swish": (-2, 2), "Sign": (-2, 2), "Identity": (-2, 2),
}
ARITH = ("Add", "Sub", "Mul", "Div")
COMPARE = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual")
LOGIC = ("And", "Or", "Xor")
VARIADIC = ("Max", "Min", "Sum", "Mean")
REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
          "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")


def legacy_broadcast(a, b, v):
    """Before version 7: B [3] broadcast into A [2,3,4] from axis 1 (legacy broadcasting)."""
    if v < 7:
        return Case([data(a), data(b)], {"broadcast": 1, "axis": 1})
    return Case([data(a), data(b)])


def build_binary(op, v):
    if op in ARITH or op == "Pow":
        lo = 0.5 if op in ("Div", "Pow") else -2.0
        a = rnd(2, 3, 4, lo=0.5 if op == "Pow" else -2.0, seed=1)
        b = rnd(3, 1, lo=lo, seed=2) if v >= 7 else rnd(3, lo=lo, seed=2)
        if op == "Pow":
            b = rnd(3, 1, lo=-1.5, hi=1.5, seed=2) if v >= 7 else rnd(3, lo=-1.5, hi=1.5, seed=2)
        return legacy_broadcast(a, b, v)
    if op in COMPARE:
        # Equal before 11 takes only bool and integer types.
        if op == "Equal":
            a = np.array([[[1, 2, 3, 4]] * 3] * 2, dtype=I64)
            b = np.array([[1], [3], [4]], dtype=I64) if v >= 7 else np.array([1, 3, 4], dtype=I64)
        else:
            a = rnd(2, 3, 4, seed=3)
            b = rnd(3, 1, seed=4) if v >= 7 else rnd(3, seed=4)
        return legacy_broadcast(a, b, v)
    if op in LOGIC:
        a = rnd(2, 3, 4, seed=5) > 0
        b = rnd(3, 1, seed=6) > 0 if v >= 7 else rnd(3, seed=6) > 0
        return legacy_broadcast(a, b, v)
    if op == "Mod":
        return Case([data(np.array([[7, -7, 5], [9, -3, 0]], I64)),
                     data(np.array([3, 4, -2], I64))])
    return None


def build_reduce(op, v):
    x = rnd(2, 3, 4, lo=0.5, hi=2.0, seed=7)
    axes_input = v >= (13 if op == "ReduceSum" else 18)
    if axes_input:
        return Case([data(x), ints([1])], {"keepdims": 0})
    return Case([data(x)], {"axes": [1], "keepdims": 0})


def build_nn(op, v):
    if op == "MatMul":
        return Case([data(rnd(2, 3, seed=8)), data(rnd(3, 4, seed=9))])
    if op == "Gemm":
        attrs = {"alpha": 0.5, "beta": 2.0, "transB": 1}
        if v < 7:
            attrs["broadcast"] = 1
        return Case([data(rnd(2, 3, seed=8)), init(rnd(4, 3, seed=9)), init(rnd(4, seed=10))],
                    attrs)
    if op == "Conv":
        return Case([data(rnd(1, 2, 5, 5, seed=11)), init(rnd(3, 2, 3, 3, seed=12)),
                     init(rnd(3, seed=13))], {"pads": [1, 1, 1, 1], "strides": [1, 2]})
    if op == "ConvTranspose":
        return Case([data(rnd(1, 2, 4, 4, seed=11)), init(rnd(2, 3, 3, 3, seed=12)),
                     init(rnd(3, seed=13))], {"strides": [2, 2]})
    if op == "BatchNormalization":
        attrs = {"epsilon": 1e-3}
        if v < 7:
            attrs["is_test"] = 1
        if v < 9:
            attrs["spatial"] = 1
        return Case([data(rnd(2, 3, 4, 4, seed=14)), init(rnd(3, seed=15)), init(rnd(3, seed=16)),
                     init(rnd(3, seed=17)), init(rnd(3, lo=0.5, hi=2, seed=18))], attrs)
    if op == "InstanceNormalization":
        return Case([data(rnd(2, 3, 4, 4, seed=14)), init(rnd(3, seed=15)), init(rnd(3, seed=16))],
                    {"epsilon": 1e-3})
    if op == "LayerNormalization":
        return Case([data(rnd(2, 3, 4, seed=14)), init(rnd(4, seed=15)), init(rnd(4, seed=16))],
                    {"axis": -1})
    if op in ("MaxPool", "AveragePool"):
        attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
        if op == "AveragePool" and v >= 7:
            attrs["count_include_pad"] = 1
        return Case([data(rnd(1, 2, 6, 6, seed=19))], attrs)
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        return Case([data(rnd(1, 2, 4, 5, seed=20))])
    if op in ("Softmax", "LogSoftmax", "Hardmax"):
        # axis=1 of a rank-3 input: before 13, the 2-D coercion over dims 1 and 2.
        return Case([data(rnd(2, 3, 4, seed=21))], {"axis": 1})
    if op == "Dropout":
        x = rnd(2, 3, seed=22)
        if v < 7:  # in test mode the mask "is not filled": only the output is compared
            return Case([data(x)], {"is_test": 1, "ratio": 0.25})
        if v < 12:
            return Case([data(x)], {"ratio": 0.25}, outputs=2)
        return Case([data(x), init(np.array(0.25, F32))], outputs=2)
    if op == "RMSNormalization":
        return Case([data(rnd(2, 3, 4, seed=14)), init(rnd(4, seed=15))], {"axis": -1})
    if op == "GroupNormalization":  # scale/bias per group in 18, per channel from 21
        c = 2 if v < 21 else 4
        return Case([data(rnd(2, 4, 3, seed=14)), init(rnd(c, seed=15)), init(rnd(c, seed=16))],
                    {"num_groups": 2, "epsilon": 1e-3})
    if op == "LpNormalization":
        return Case([data(rnd(2, 3, seed=24))], {"axis": 1, "p": 2})
    if op == "LRN":
        return Case([data(rnd(1, 5, 3, 3, seed=25))], {"size": 3, "alpha": 0.01, "beta": 0.75})
    if op == "SpaceToDepth":
        return Case([data(rnd(1, 2, 4, 4, seed=26))], {"blocksize": 2})
    if op == "DepthToSpace":
        return Case([data(rnd(1, 8, 2, 3, seed=27))],
                    {"blocksize": 2, **({"mode": "CRD"} if v >= 11 else {})})
    if op == "LpPool":  # p is a float in LpPool-1, an int from 2 on
        return Case([data(rnd(1, 2, 4, 5, seed=28))],
                    {"kernel_shape": [2, 3], "pads": [1, 0, 0, 1], "strides": [1, 2],
                     "p": 3.0 if v < 2 else 3})
    if op == "MeanVarianceNormalization":
        return Case([data(rnd(2, 3, 4, 2, seed=29))], {"axes": [0, 2]})
    if op == "ReverseSequence":
        return Case([data(rnd(4, 3, 2, seed=30)), ints([4, 1, 2])], {"time_axis": 0, "batch_axis": 1})
    if op == "Einsum":
        return Case([data(rnd(2, 3, 4, seed=31)), data(rnd(2, 4, 2, seed=32))],
                    {"equation": "bij,bjk->bik"})
    if op == "AffineGrid":
        return Case([data(rnd(2, 2, 3, seed=34)), ints([2, 1, 3, 4])], {"align_corners": 1})
    if op == "CumProd":
        return Case([data(rnd(3, 4, seed=33)), ints(1)], {"exclusive": 1})
    if op == "GridSample":  # 16: bilinear/bicubic, 4-D; 20/22: linear/cubic, N-D
        grid = rnd(2, 3, 4, 2, lo=-1.3, hi=1.3, seed=63)
        if v == 16:
            return Case([data(rnd(2, 2, 4, 5, seed=62)), data(grid)],
                        {"mode": "bicubic", "padding_mode": "border"})
        if v == 20:
            return Case([data(rnd(2, 2, 4, 5, seed=62)), data(grid)],
                        {"mode": "linear", "padding_mode": "reflection", "align_corners": 1})
        return Case([data(rnd(1, 2, 3, 4, 5, seed=64)),
                     data(rnd(1, 2, 3, 2, 3, lo=-1.2, hi=1.2, seed=65))], {"mode": "nearest"})
    if op == "Col2Im":
        return Case([data(rnd(2, 4, 6, seed=66)), ints([4, 5]), ints([2, 2])],
                    {"strides": [2, 2], "pads": [0, 1, 0, 0]})
    if op == "DeformConv":  # 22 widens the types only
        attrs = {"pads": [1, 1, 1, 1]} if v == 19 else {"group": 2, "offset_group": 2}
        x = rnd(1, 4, 4, 5, seed=67)
        w = rnd(2, 2 if v == 22 else 4, 3, 3, seed=68)
        oh, ow = (4, 5) if v == 19 else (2, 3)
        og = attrs.get("offset_group", 1)
        return Case([data(x), init(w), data(rnd(1, 2 * og * 9, oh, ow, seed=69)),
                     init(rnd(2, seed=70)), data(rnd(1, og * 9, oh, ow, lo=0, hi=1, seed=71))],
                    attrs)
    if op == "Det":
        return Case([data(rnd(2, 3, 3, seed=72))])
    if op == "MaxUnpool":  # output_shape equal to the inferred dims: onnxruntime places the
        # indices in output_shape's tensor, the spec (and a800c) in the inferred one
        x = rnd(1, 2, 2, 3, seed=73)
        idx = ints([[[[0, 3, 4], [13, 14, 23]], [[25, 26, 29], [36, 39, 46]]]])
        attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
        return Case([data(x), idx, ints([1, 2, 4, 6])] if v == 11 else [data(x), idx], attrs)
    if op == "RoiAlign":  # coordinate_transformation_mode from 16
        attrs = {"output_height": 2, "output_width": 3, "sampling_ratio": 2,
                 "spatial_scale": 0.5}
        if v >= 16:
            attrs["coordinate_transformation_mode"] = "output_half_pixel" if v == 22 else \
                "half_pixel"
        rois = init(np.array([[1, 1, 7, 9], [0, 2, 5, 4], [3, 0, 9, 9]], F32))
        return Case([data(rnd(2, 2, 5, 6, seed=74)), rois, ints([1, 0, 1])], attrs)
    if op == "NonZero":
        return Case([init(np.array([[1, 0, 2], [0, 0, 3]], F32))])
    if op == "Unique":
        return Case([init(np.array([[2, 1], [2, 1], [0, 3]], F32))], {"axis": 0, "sorted": 1},
                    outputs=4)
    if op == "NonMaxSuppression":
        boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 10, 1, 11], [0, 10.1, 1, 11.1]]],
                         F32)
        return Case([init(boxes), init(np.array([[[0.9, 0.75, 0.6, 0.95]]], F32)), ints([2]),
                     init(np.array([0.5], F32)), init(np.array([0.0], F32))],
                    {"center_point_box": 0})
    if op == "Attention":
        if v == 23:  # 4-D with a KV cache, causal from the past length, every output
            return Case([data(rnd(2, 2, 3, 4, seed=35)), data(rnd(2, 2, 3, 4, seed=36)),
                         data(rnd(2, 2, 3, 5, seed=37)), data(rnd(3, 5, seed=38)),
                         data(rnd(2, 2, 2, 4, seed=39)), data(rnd(2, 2, 2, 5, seed=40))],
                        {"is_causal": 1, "qk_matmul_output_mode": 2}, outputs=4)
        if v == 24:  # 4-D GQA with an external cache (nonpad_kv_seqlen) and a bool mask
            mask = rnd(3, 6, seed=41) > -1.0
            return Case([data(rnd(2, 4, 3, 4, seed=42)), data(rnd(2, 2, 6, 4, seed=43)),
                         data(rnd(2, 2, 6, 4, seed=44)), data(mask), (None, False), (None, False),
                         data(np.array([5, 3], I64))], {"is_causal": 1})
        # 3-D GQA with a sliding window and softcap
        return Case([data(rnd(2, 4, 16, seed=45)), data(rnd(2, 5, 8, seed=46)),
                     data(rnd(2, 5, 8, seed=47))],
                    {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "left_window_size": 2,
                     "softcap": 3.0, "scale": 0.5})
    if op == "RotaryEmbedding":  # 4-D with position ids, interleaved, a partial rotation
        return Case([data(rnd(2, 2, 3, 6, seed=48)), data(rnd(8, 2, seed=49)),
                     data(rnd(8, 2, seed=50)), data(np.array([[0, 3, 5], [7, 1, 2]], I64))],
                    {"interleaved": 1, "rotary_embedding_dim": 4})
    if op in ("RNN", "GRU", "LSTM"):
        return build_recurrent(op, v)
    if op == "LinearAttention":  # gated delta, GQA (4 query heads on 2 kv heads), a past state
        return Case([data(rnd(2, 3, 16, seed=72)), data(rnd(2, 3, 8, lo=-0.5, hi=0.5, seed=73)),
                     data(rnd(2, 3, 6, seed=74)), data(rnd(2, 2, 4, 3, seed=75)),
                     data(rnd(2, 3, 8, lo=-0.5, hi=0.0, seed=76)),
                     data(rnd(2, 3, 2, lo=0.0, hi=1.0, seed=77))],
                    {"q_num_heads": 4, "kv_num_heads": 2}, outputs=2)
    if op == "CausalConvWithState":  # with a bias and a past state, SiLU
        return Case([data(rnd(2, 3, 5, seed=78)), init(rnd(3, 1, 4, seed=79)),
                     init(rnd(3, seed=80)), data(rnd(2, 3, 3, seed=81))],
                    {"activation": "silu"}, outputs=2)
    if op == "SoftmaxCrossEntropyLoss":
        return Case([data(rnd(3, 5, seed=23)), ints([0, 4, 2])], {"reduction": "mean"})
    if op == "NegativeLogLikelihoodLoss":
        return Case([data(rnd(3, 5, seed=23)), ints([0, 4, 2])], {"reduction": "sum"})
    return None


def build_recurrent(op, v):
    """RNN, GRU, LSTM: each version a different direction, layout and set of optional inputs."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    h, i, s, b = 3, 2, 4, 2
    dirs = 2 if v in (7, 14) else 1
    x = rnd(s, b, i, seed=64)
    w = rnd(dirs, gates * h, i, lo=-0.8, hi=0.8, seed=65)
    r = rnd(dirs, gates * h, h, lo=-0.8, hi=0.8, seed=66)
    bias = rnd(dirs, 2 * gates * h, lo=-0.5, hi=0.5, seed=67)
    none = (None, False)
    attrs = {"hidden_size": h}
    if dirs == 2:
        attrs["direction"] = "bidirectional"
    outputs = 3 if op == "LSTM" else 2
    if v < 7:  # the defaults, reverse, the bias
        attrs["direction"] = "reverse"
        return Case([data(x), init(w), init(r), init(bias)], attrs, outputs)
    if v == 7 or v == 3:  # bidirectional with initial states (LSTM: and peepholes)
        ins = [data(x), init(w), init(r), init(bias), none, data(rnd(dirs, b, h, seed=68))]
        if op == "LSTM":
            ins += [data(rnd(dirs, b, h, seed=69)), init(rnd(dirs, 3 * h, seed=70))]
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        return Case(ins, attrs, outputs)
    if v == 14:  # clip and other activations (layout 1, which ORT refuses: the node tests)
        attrs["clip"] = 0.7
        acts = {"RNN": ["Relu", "Tanh"], "GRU": ["HardSigmoid", "Tanh", "Sigmoid", "Softsign"],
                "LSTM": ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Tanh", "Softsign"]}[op]
        attrs["activations"] = acts
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        ins = [data(x), init(w), init(r), init(bias), none, data(rnd(dirs, b, h, seed=71))]
        return Case(ins, attrs, outputs)
    # 22: reverse with sequence lengths (one shorter than the sequence), LeakyRelu with an alpha
    attrs["direction"] = "reverse"
    lens = np.array([s, 2], np.int32)
    if op == "RNN":
        attrs["activations"] = ["LeakyRelu"]
        attrs["activation_alpha"] = [0.3]
    return Case([data(x), init(w), init(r), init(bias), data(lens)], attrs, outputs)


def build_shape(op, v):
    x = rnd(2, 3, 4, seed=30)
    if op == "Reshape":
        return Case([data(x)], {"shape": [3, -1]}) if v < 5 else Case([data(x), ints([3, -1])])
    if op == "Flatten":
        return Case([data(x)], {"axis": 2})
    if op == "Transpose":
        return Case([data(x)], {"perm": [2, 0, 1]})
    if op == "Concat":
        c = Case([data(rnd(2, 3, seed=31)), data(rnd(2, 2, seed=32))])
        if v >= 4:
            c.attrs["axis"] = 1  # Concat-1 defaults to 1
        return c
    if op == "Split":
        y = rnd(2, 3, seed=33)
        if v >= 13:
            return Case([data(y), ints([1, 2])], {"axis": 1}, outputs=2)
        return Case([data(y)], {"axis": 1, "split": [1, 2]}, outputs=2)
    if op == "Slice":
        if v < 10:
            return Case([data(x)], {"starts": [1, 0], "ends": [3, -1], "axes": [1, 2]})
        return Case([data(x), ints([1, 0]), ints([3, -1]), ints([1, 2]), ints([1, 2])])
    if op == "Gather":
        return Case([data(x), ints([2, 0])], {"axis": 1})
    if op == "GatherND":  # batch_dims from 12 on
        if v < 12:
            return Case([data(rnd(2, 3, 4, seed=33)), ints([[0, 1], [1, 2]])])
        return Case([data(rnd(2, 3, 4, seed=33)), ints([[2], [0]])], {"batch_dims": 1})
    if op == "GatherElements":
        return Case([data(rnd(2, 3, seed=34)), ints([[2, 0], [1, 1]])], {"axis": 1})
    if op == "ScatterND":  # reduction from 16 on (max/min from 18)
        attrs = {"reduction": "mul"} if v == 16 else {"reduction": "max"} if v >= 18 else {}
        return Case([data(rnd(4, 3, seed=57)), ints([[1], [3], [1]] if attrs else [[1], [3]]),
                     data(rnd(3 if attrs else 2, 3, seed=58))], attrs)
    if op in ("ScatterElements", "Scatter"):  # Scatter-9/11 is ScatterElements-11's old name
        attrs = {"axis": 1}
        idx = [[2, 0], [1, 2]]
        if op == "ScatterElements" and v >= 16:  # repeats combine under a reduction
            attrs["reduction"] = "add" if v == 16 else "min"
            idx = [[2, 2], [1, 1]]
        return Case([data(rnd(2, 3, seed=59)), ints(idx), data(rnd(2, 2, seed=60))], attrs)
    if op == "TensorScatter":  # a KV-cache write along axis -2, wrapping in mode circular
        return Case([data(rnd(2, 4, 3, seed=62)), data(rnd(2, 2, 3, seed=63)),
                     data(np.array([3, 1], I64))], {"mode": "circular"})
    if op == "TopK":  # k an attribute before 10; largest/sorted from 11
        y = rnd(3, 5, seed=61)
        if v < 10:
            return Case([data(y)], {"k": 2, "axis": 1}, outputs=2)
        return Case([data(y), ints([2])], {"axis": 0} if v == 10 else {"largest": 0}, outputs=2)
    if op in ("Squeeze", "Unsqueeze"):
        y = rnd(2, 1, 3, seed=35) if op == "Squeeze" else rnd(2, 3, seed=35)
        return Case([data(y)], {"axes": [1]}) if v < 13 else Case([data(y), ints([1])])
    if op == "Expand":
        return Case([data(rnd(3, 1, seed=36)), ints([2, 3, 4])])
    if op == "Pad":
        y = rnd(2, 3, seed=37)
        if v < 11:
            return Case([data(y)], {"paddings" if v < 2 else "pads": [0, 1, 0, 2], "value": 1.5})
        if v == 19:  # mode wrap (from 19), pads beyond the dims (numpy's periodic wrap)
            return Case([data(y), ints([1, 4, 2, 1])], {"mode": "wrap"})
        return Case([data(y), ints([0, 1, 0, 2]), init(np.array(1.5, F32))])
    if op == "Tile":
        y = rnd(2, 3, seed=38)
        if v < 6:  # tiles and axis have the input's type
            return Case([data(y), init(np.array(2, F32)), init(np.array(1, F32))])
        return Case([data(y), ints([2, 1])])
    if op == "Shape":
        return Case([data(x)], {"start": 1} if v >= 15 else {})
    if op == "Size":
        return Case([data(x)])
    if op == "ConstantOfShape":
        from onnx import numpy_helper
        return Case([ints([2, 3])], {"value": numpy_helper.from_array(np.array([2.5], F32))})
    if op == "Constant":
        from onnx import numpy_helper
        return Case([], {"value": numpy_helper.from_array(rnd(2, 3, seed=39))})
    if op == "Range":
        return Case([init(np.array(1.0, F32)), init(np.array(4.0, F32)),
                     init(np.array(0.5, F32))])
    if op == "Trilu":
        return Case([data(rnd(3, 4, seed=40)), ints(1)], {"upper": 0})
    if op == "OneHot":
        return Case([data(np.array([0, 2, 1], I64)), init(np.array(3, I64)),
                     init(np.array([-1.0, 2.0], F32))])
    if op == "Where":
        return Case([data(rnd(2, 3, seed=41) > 0), data(rnd(2, 3, seed=42)), data(rnd(3, seed=43))])
    if op == "EyeLike":
        return Case([data(rnd(3, 4, seed=54))], {"k": 1})
    if op == "Compress":
        return Case([data(rnd(3, 2, seed=55)), init(np.array([True, False, True]))], {"axis": 0})
    if op == "CenterCropPad":
        return Case([data(rnd(4, 5, seed=56)), ints([3, 6])])
    if op in ("ArgMax", "ArgMin"):
        return Case([data(x)], {"axis": 1, "keepdims": 0})
    if op == "CumSum":
        return Case([data(rnd(2, 3, seed=44)), init(np.array(1, I64))], {"reverse": 1})
    return None


# Every op with a case here; schema_history_test.py tests those a800c supports.
CASE_OPS = set(UNARY) | set(ARITH) | set(COMPARE) | set(LOGIC) | set(VARIADIC) | set(REDUCE) | {
    "IsNaN", "IsInf", "Not", "Clip", "Cast", "CastLike", "PRelu", "Upsample", "Pow", "Mod",
    "MatMul", "Gemm", "Conv", "ConvTranspose", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Softmax", "LogSoftmax", "Hardmax", "Dropout", "SoftmaxCrossEntropyLoss",
    "NegativeLogLikelihoodLoss", "RMSNormalization", "GroupNormalization", "LpNormalization",
    "LRN", "SpaceToDepth", "DepthToSpace", "Reshape", "Flatten", "Transpose", "Concat", "Split",
    "Slice", "Gather", "GatherND", "GatherElements", "ScatterND", "ScatterElements",
    "Scatter", "TensorScatter", "TopK", "Squeeze", "Unsqueeze", "Expand", "Pad", "Tile", "Shape",
    "Size", "ConstantOfShape", "Constant", "Range", "Trilu", "OneHot", "Where", "ArgMax",
    "ArgMin", "CumSum", "EyeLike", "Compress", "CenterCropPad", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "BitwiseNot", "BitShift", "LpPool", "MeanVarianceNormalization",
    "ReverseSequence", "Einsum", "CumProd", "AffineGrid", "Attention", "RotaryEmbedding",
    "Resize", "RNN", "GRU", "LSTM", "LinearAttention", "CausalConvWithState", "GridSample",
    "Col2Im", "DeformConv", "BitCast", "Det", "MaxUnpool", "RoiAlign", "NonZero", "Unique",
    "NonMaxSuppression"}
CASE_OPS |= QUANT | CONTROL_FLOW | SIGNAL | RANDOM


def build(op, v):
    if op in RANDOM:
        return build_random(op, v)
    if op in QUANT:
        return build_quant(op, v)
    if op in CONTROL_FLOW:
        return build_control_flow(op, v)
    if op in SIGNAL:
        return build_signal(op, v)
    if op in UNARY:
        lo, hi = UNARY[op]
        return Case([data(rnd(2, 3, 4, lo=lo, hi=hi, seed=sum(map(ord, op)) % 97))])
    if op in ("IsNaN", "IsInf"):
        return Case([data(np.array([1.0, np.nan, np.inf, -np.inf, -2.0], F32))])
    if op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        return Case([data(np.array([[1, 6, -3], [12, 0, 7]], np.int32)),
                     data(np.array([3, 5, -1], np.int32))])
    if op == "BitwiseNot":
        return Case([data(np.array([[1, 6, -3], [12, 0, 7]], np.int32))])
    if op == "BitShift":
        return Case([data(np.array([1, 6, 200, 7], np.uint8)),
                     data(np.array([1, 2, 1, 0], np.uint8))], {"direction": "LEFT"})
    if op == "BitCast":  # float bits as int32 (6)
        return Case([data(np.array([[1.5, -2.0, 0.0], [-0.0, 3e38, 1e-40]], F32))], {"to": 6})
    if op == "Not":
        return Case([data(rnd(2, 3, seed=45) > 0)])
    if op in VARIADIC:
        if v < 8:  # no broadcasting before 8
            return Case([data(rnd(2, 3, seed=46)), data(rnd(2, 3, seed=47)),
                         data(rnd(2, 3, seed=48))])
        return Case([data(rnd(2, 3, seed=46)), data(rnd(3, seed=47)), data(rnd(2, 1, seed=48))])
    if op == "Clip":
        x = rnd(2, 3, 4, seed=49)
        if v < 11:
            return Case([data(x)], {"min": -0.5, "max": 0.75})
        return Case([data(x), init(np.array(-0.5, F32)), init(np.array(0.75, F32))])
    if op == "Cast":
        return Case([data(rnd(2, 3, seed=50))], {"to": "DOUBLE" if v < 6 else 11})
    if op == "CastLike":
        return Case([data(rnd(2, 3, seed=50)), data(np.zeros(1, np.float64))])
    if op in REDUCE:
        return build_reduce(op, v)
    if op == "Upsample":  # -1: nearest by integers; -7: linear; -9: nearest by 2 and 1.5
        x = rnd(1, 2, 3, 4, seed=53)
        if v < 7:
            return Case([data(x)], {"height_scale": 2.0, "width_scale": 3.0})
        if v < 9:
            return Case([data(x)], {"scales": [1.0, 1.0, 2.0, 1.5], "mode": "linear"})
        return Case([data(x), init(np.array([1, 1, 2, 1.5], F32))], {"mode": "nearest"})
    if op == "Resize":
        return build_resize(v)
    if op == "PRelu":
        if v < 7:  # the one form PRelu-1/6 define: one slope shared by every channel
            return Case([data(rnd(2, 3, 4, seed=51)), init(np.array([0.25], F32))])
        return Case([data(rnd(2, 3, 4, seed=51)), init(rnd(4, seed=52))])
    return build_binary(op, v) or build_nn(op, v) or build_shape(op, v)


def build_resize(v):
    """One case per Resize version, each a different mode, coordinate mode and size input."""
    x = rnd(1, 2, 4, 5, seed=57)
    none = (None, False)
    if v < 11:  # nearest, down along H and up along W (asymmetric, onnxruntime's rounding)
        return Case([data(x), init(np.array([1, 1, 0.6, 1.5], F32))], {"mode": "nearest"})
    if v < 13:  # cubic, align_corners, by sizes (scales an empty tensor, as Resize-11 needs)
        return Case([data(x), init(np.zeros(0, F32)), init(np.zeros(0, F32)),
                     ints([1, 2, 7, 3])],
                    {"mode": "cubic", "coordinate_transformation_mode": "align_corners"})
    if v < 18:  # linear crop and resize with a roi partly outside the input
        roi = np.array([0, 0, 0.1, -0.2, 1, 1, 1.2, 0.9], F32)
        return Case([data(x), init(roi), init(np.array([1, 1, 1.5, 1.2], F32))],
                    {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                     "extrapolation_value": 0.5})
    if v < 19:  # antialiased linear down, over axes H and W, keeping the aspect ratio
        return Case([data(x), none, none, ints([3, 3])],
                    {"mode": "linear", "antialias": 1, "axes": [2, 3],
                     "keep_aspect_ratio_policy": "not_larger"})
    return Case([data(x), none, init(np.array([1, 1, 0.8, 1.3], F32))],
                {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric",
                 "exclude_outside": 1, "cubic_coeff_a": -0.5})


def spec_equivalent(op, v, case):
    """For legacy forms that neither ORT nor onnx's version converter takes: (version, Case) of
    the same computation in the next form ORT runs, written from the spec by hand, or None."""
    if case.attrs.get("broadcast") == 1 and "axis" in case.attrs:
        # Legacy broadcasting: B's dims align with A's from `axis` on: B gets trailing 1s.
        (a, a_init), (b, b_init) = case.inputs
        b = b.reshape(b.shape + (1,) * (a.ndim - case.attrs["axis"] - b.ndim))
        attrs = {k: x for k, x in case.attrs.items() if k not in ("broadcast", "axis")}
        return 7, Case([(a, a_init), (b, b_init)], attrs)
    if op == "Cast" and v < 6:
        from onnx import TensorProto
        return 6, Case(case.inputs, {"to": getattr(TensorProto, case.attrs["to"])})
    if op == "Pad" and v < 2:
        attrs = dict(case.attrs)
        attrs["pads"] = attrs.pop("paddings")
        return 2, Case(case.inputs, attrs)
    if op == "Tile" and v < 6:
        (x, x_init), (tiles, _), (axis, _) = case.inputs
        repeats = [1] * x.ndim
        repeats[int(axis)] = int(tiles)
        return 6, Case([(x, x_init), (np.array(repeats, I64), True)])
    if op in ("RNN", "GRU", "LSTM") and v < 7:  # GRU-3's and -1's case is GRU-7's too
        return 7, case
    if op == "Split" and v < 2:
        return 2, Case(case.inputs, case.attrs, case.outputs)
    if op == "RoiAlign" and v == 22:  # 22 widens the types only (onnxruntime has no 22)
        return 16, case
    return None
