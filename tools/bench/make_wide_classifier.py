#!/usr/bin/env python3
"""A linear classifier over many classes, for timing the losses: Gemm x [N, 128] . W [128, V]
+ b -> logits [N, V]. `a800c MODEL --loss=cross_entropy` puts SoftmaxCrossEntropyLoss and its
gradient over V classes at the end of the step, a shape where the loss is a large share of it.

    python3 tools/bench/make_wide_classifier.py OUT.onnx [--classes 16384]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--classes", type=int, default=16384)
    ap.add_argument("--features", type=int, default=128)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((args.features, args.classes)) * 0.05).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["logits"])], "wide_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", args.features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", args.classes])],
        initializer=[numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.zeros(args.classes, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
