#!/usr/bin/env python3
"""Generates the official ONNX backend node tests locally, with the generator module of the
installed onnx package (onnx.backend.test.case.node), in the layout onnx's
`backend-test-tools generate-data` writes: DIR/node/<case>/model.onnx and
DIR/node/<case>/test_data_set_N/{input,output}_K.pb, plus DIR/node/<case>/tolerance.json.

    python3 tests/onnx/gen_node_tests.py DIR
"""
import json
import os
import shutil
import sys
import warnings

from onnx import numpy_helper
from onnx.backend.test.case import model as model_cases
from onnx.backend.test.case import node as node_cases


def write_tensor(path, value, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def main():
    out = os.path.join(sys.argv[1], "node")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases()
        # The model-level cases of ONNX's Gradient op (ai.onnx.preview.training) are node tests
        # in spirit: one Gradient over an Add/Mul graph.
        cases += [c for c in model_cases.collect_testcases() if c.name.startswith("test_gradient")]
    written = 0
    for case in cases:
        case_dir = os.path.join(out, case.name)
        os.makedirs(case_dir, exist_ok=True)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(case_dir, "tolerance.json"), "w") as f:
            json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        graph = case.model.graph
        try:
            for i, (inputs, outputs) in enumerate(case.data_sets):
                ds = os.path.join(case_dir, f"test_data_set_{i}")
                os.makedirs(ds)
                for j, value in enumerate(inputs):
                    write_tensor(os.path.join(ds, f"input_{j}.pb"), value, graph.input[j].name)
                for j, value in enumerate(outputs):
                    write_tensor(os.path.join(ds, f"output_{j}.pb"), value, graph.output[j].name)
        except Exception as e:  # sequences, maps, optionals: not tensors, never supported
            with open(os.path.join(case_dir, "NOT_TENSORS"), "w") as f:
                f.write(str(e))
        written += 1
    print(f"generated {written} node test cases in {out}")


if __name__ == "__main__":
    main()
