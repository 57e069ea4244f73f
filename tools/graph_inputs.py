"""The graph inputs a feed must give an ONNX model: each input that is not an initializer, with
its dims (a dim without a value is the batch) and numpy dtype. The scripts that make seeded feeds
(tests/e2e/parity_vs_onnxruntime.py, tests/lit/run/Inputs/ort_check.py,
tools/bench/precision_vs_converter.py) read the inputs here and choose the values themselves."""
import onnx


def feed_inputs(model, batch):
    """Yields (name, dims, numpy dtype) for every graph input of `model` not an initializer."""
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else batch for d in tt.shape.dim]
        yield vi.name, dims, onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
