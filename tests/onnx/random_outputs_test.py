#!/usr/bin/env python3
"""random_outputs.py's property checks pass on right draws and fail on wrong ones.

    python3 tests/onnx/random_outputs_test.py
"""
import os
import sys
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_outputs as ro  # noqa: E402


def dropout_model(with_mask):
    outs = ["y", "z"] if with_mask else ["y"]
    node = helper.make_node("Dropout", ["x", "r", "t"], outs, seed=0)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else TensorProto.BOOL,
                                       [3, 4, 5]) for o in outs])
    return helper.make_model(graph)


def bernoulli_model():
    node = helper.make_node("Bernoulli", ["x"], ["y"])
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [10])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [10])])
    return helper.make_model(graph)


class RandomOutputsTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(5)

    def test_uniform(self):
        u = self.rng.uniform(-2.0, 3.0, 20000).astype(np.float32)
        self.assertIsNone(ro.check_uniform(u, -2.0, 3.0))
        self.assertIn("outside", ro.check_uniform(np.append(u, np.float32(3.0)), -2.0, 3.0))
        self.assertIn("mean", ro.check_uniform(u * 0.9 + 0.3, -2.0, 3.0))
        # Right mean, wrong spread: all draws in the middle half.
        self.assertIn("variance", ro.check_uniform(u * 0.5 + 0.25, -2.0, 3.0))
        # Too few values for statistics: only the range is checked.
        self.assertIsNone(ro.check_uniform(np.zeros(10, np.float32), 0.0, 1.0))

    def test_normal(self):
        z = self.rng.normal(1.5, 2.0, 20000)
        self.assertIsNone(ro.check_normal(z, 1.5, 2.0))
        self.assertIn("mean", ro.check_normal(z + 0.2, 1.5, 2.0))
        self.assertIn("variance", ro.check_normal(z * 1.1 - 0.15, 1.5, 2.0))
        self.assertIn("non-finite", ro.check_normal(np.append(z, np.inf), 1.5, 2.0))

    def test_bernoulli(self):
        p = self.rng.uniform(0, 0.6, 5000)
        p[:50], p[50:100] = 0.0, 1.0
        y = (self.rng.uniform(0, 1, p.size) < p).astype(np.float64)
        self.assertIsNone(ro.check_bernoulli(y, p))
        self.assertIn("other than 0 and 1", ro.check_bernoulli(y * 0.5, p))
        wrong = y.copy()
        wrong[0] = 1.0
        self.assertIn("p = 0", ro.check_bernoulli(wrong, p))
        # The complement (onnx's expanded function compares the other way) fails the count.
        flipped = 1.0 - y
        flipped[:50], flipped[50:100] = 0.0, 1.0
        self.assertIn("ones where", ro.check_bernoulli(flipped, p))
        model = bernoulli_model()
        pp = np.linspace(0, 1, 10)
        ok, _ = ro.check("test_bernoulli", model, {"x": pp}, [(pp >= 0.5).astype(np.float64)])
        self.assertTrue(ok)
        ok, msg = ro.check("test_bernoulli", model, {"x": pp}, [np.full(10, 2.0)])
        self.assertFalse(ok)
        self.assertIn("output 'y' fails the bernoulli property check", msg)

    def test_dropout(self):
        x = self.rng.standard_normal((3, 4, 5)).astype(np.float32)
        x[0, 0, 0] = 0.0
        for ratio in (0.5, 0.75, 0.2):
            mask = self.rng.uniform(0, 1, x.shape) >= ratio
            y = np.where(mask, x / np.float32(1 - ratio), np.float32(0)).astype(np.float32)
            self.assertIsNone(ro.check_dropout(x, ratio, True, y, mask))
            self.assertIsNone(ro.check_dropout(x, ratio, True, y))
            # A kept element not scaled, a dropped one not zero, a mask not bool.
            bad = y.copy()
            i = np.argwhere(mask & (x != 0))[0]
            bad[tuple(i)] = x[tuple(i)]
            self.assertIn("kept element", ro.check_dropout(x, ratio, True, bad, mask))
            bad = y.copy()
            j = np.argwhere(~mask)[0]
            bad[tuple(j)] = 1.0
            self.assertIn("dropped element", ro.check_dropout(x, ratio, True, bad, mask))
            self.assertIn("not bool",
                          ro.check_dropout(x, ratio, True, y, mask.astype(np.float32)))
        # Keeping everything at ratio 0.75 is implausible; so is keeping nothing at 0.2.
        keep_all = x * np.float32(4)
        self.assertIn("kept", ro.check_dropout(x, 0.75, True, keep_all, np.ones(x.shape, bool)))
        self.assertIn("kept", ro.check_dropout(x, 0.2, True, np.zeros_like(x),
                                               np.zeros(x.shape, bool)))
        # Ratio 0 and inference are exact.
        self.assertIsNone(ro.check_dropout(x, 0.0, True, x.copy(), np.ones(x.shape, bool)))
        self.assertIn("equal the input", ro.check_dropout(x, 0.0, True, x * 2))
        self.assertIn("all true", ro.check_dropout(x, 0.5, False, x.copy(),
                                                   np.zeros(x.shape, bool)))
        # Through check(), with the graph's inputs by name.
        mask = self.rng.uniform(0, 1, x.shape) >= 0.5
        y = np.where(mask, x * 2, 0).astype(np.float32)
        feeds = {"x": x, "r": np.array(0.5, np.float32), "t": np.array(True)}
        ok, _ = ro.check("test_training_dropout_mask", dropout_model(True), feeds, [y, mask])
        self.assertTrue(ok)
        ok, msg = ro.check("test_training_dropout_mask", dropout_model(True), feeds, [x, mask])
        self.assertFalse(ok)
        self.assertIn("dropout property check", msg)

    def test_listed_cases_exist_in_onnx(self):
        # Every listed case is an onnx node test (so a renamed case is noticed): the generated
        # data (gen_node_tests.py) named by A8_ONNX_NODE_DATA, else the installed onnx's.
        root = os.path.join(os.environ.get("A8_ONNX_NODE_DATA", ""), "node")
        if not os.path.isdir(root):
            root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
        if not os.path.isdir(root):
            self.skipTest("no node test data (set A8_ONNX_NODE_DATA)")
        names = set(os.listdir(root))
        for case in ro.RANDOM_CASES:
            self.assertIn(case, names)


if __name__ == "__main__":
    unittest.main()
