#!/usr/bin/env python3
"""Builds the example models that the tests and the demo use, with the onnx Python API.

    python3 models/make_models.py [--out DIR] [--bert-layers N] [--bert-hidden H --bert-heads A
        --bert-seq S --bert-ffn F --bert-vocab V] [--external-data]

Writes, each with a dynamic batch dim `N` and seeded random weights:
- mlp.onnx:  digits classifier, x f32[N,64] -> Gemm/Relu x2 -> logits f32[N,10]
- cnn.onnx:  small ResNet-style CNN, x f32[N,1,8,8] -> Conv/BatchNorm/Relu, one residual block,
             MaxPool, GlobalAveragePool, Flatten, Gemm -> logits f32[N,10]
- bert.onnx: BERT-style encoder, input_ids i64[N,16], attention_mask i64[N,16] -> token and
             position embeddings (Gather), LayerNormalization, multi-head self-attention
             (MatMul, Reshape, Transpose, Softmax, Where for the mask), GELU via Erf (as
             PyTorch exports it), residuals, mean pooling, classifier -> logits f32[N,2].
             The attention reshapes take their target shape from a Shape->Gather->Concat
             subgraph, as exporters write them, so constant folding has real work.
The --bert-* flags size the BERT-style model (the defaults make the small example; BERT-base
is --bert-hidden 768 --bert-heads 12 --bert-seq 128 --bert-ffn 3072 --bert-vocab 30522 with 12
layers). A BERT model of another size is written as bert_L{layers}_H{hidden}_S{seq}.onnx so it
never replaces the example. --external-data stores the weights in a file beside the model
(NAME.onnx.data), as models over protobuf's 2 GiB limit must.
Opset 17 (LayerNormalization is ai.onnx since 17).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Builder:
    def __init__(self, seed):
        self.nodes = []
        self.inits = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, name, shape, scale=None, transposed=False):
        """Normal(0, scale) weights; scale defaults to 1/sqrt(fan-in). A 2-D weight is [in, out]
        (MatMul's B), or [out, in] with transposed=True (Gemm's B with transB=1)."""
        if len(shape) == 2:
            fan_in = shape[1] if transposed else shape[0]
        else:
            fan_in = int(np.prod(shape[1:]))
        scale = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        w = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, name, array):
        # Float scalars are constants of the network (GELU's 0.5, the attention scale), not
        # weights: emit them as Constant nodes, as torch.onnx does, so that training does not
        # treat them as parameters. Everything else is an initializer.
        array = np.asarray(array)
        if array.ndim == 0 and array.dtype.kind == "f":
            self.nodes.append(helper.make_node(
                "Constant", [], [name], name=name,
                value=numpy_helper.from_array(array, name)))
            return name
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type, inputs, outputs=None, name=None, **attrs):
        name = name or self.name(op_type)
        outputs = outputs or [name + "_out"]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, graph_name, inputs, outputs, check=True):
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="a800c-models")
        model.ir_version = 8
        if check:  # the checker serialises the model: not possible past protobuf's 2 GiB
            onnx.checker.check_model(model, full_check=True)
        return model


def make_mlp():
    b = Builder(1)
    x = "x"
    h = b.op("Gemm", [x, b.weight("fc1.weight", [128, 64], transposed=True),
                  b.const("fc1.bias", np.zeros(128, np.float32))],
             name="fc1", transB=1)
    h = b.op("Relu", [h], name="relu1")
    h = b.op("Gemm", [h, b.weight("fc2.weight", [64, 128], transposed=True),
                  b.const("fc2.bias", np.zeros(64, np.float32))],
             name="fc2", transB=1)
    h = b.op("Relu", [h], name="relu2")
    b.op("Gemm", [h, b.weight("fc3.weight", [10, 64], transposed=True),
                  b.const("fc3.bias", np.zeros(10, np.float32))],
         ["logits"], name="fc3", transB=1)
    return b.model("mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])])


def make_cnn():
    b = Builder(2)

    def conv_bn(x, cin, cout, prefix, relu=True):
        w = b.weight(f"{prefix}.conv.weight", [cout, cin, 3, 3])
        y = b.op("Conv", [x, w], name=f"{prefix}.conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        y = b.op("BatchNormalization",
                 [y, b.const(f"{prefix}.bn.scale", np.ones(cout, np.float32)),
                  b.const(f"{prefix}.bn.bias", np.zeros(cout, np.float32)),
                  b.const(f"{prefix}.bn.mean", np.zeros(cout, np.float32)),
                  b.const(f"{prefix}.bn.var", np.ones(cout, np.float32))],
                 name=f"{prefix}.bn", epsilon=1e-5, momentum=0.9)
        return b.op("Relu", [y], name=f"{prefix}.relu") if relu else y

    h = conv_bn("x", 1, 16, "stem")
    r = conv_bn(h, 16, 16, "block1.a")
    r = conv_bn(r, 16, 16, "block1.b", relu=False)
    h = b.op("Add", [h, r], name="block1.add")
    h = b.op("Relu", [h], name="block1.relu")
    h = b.op("MaxPool", [h], name="pool", kernel_shape=[2, 2], strides=[2, 2])
    h = conv_bn(h, 16, 32, "block2")
    h = b.op("GlobalAveragePool", [h], name="gap")
    h = b.op("Flatten", [h], name="flatten", axis=1)
    b.op("Gemm", [h, b.weight("fc.weight", [10, 32], transposed=True),
                  b.const("fc.bias", np.zeros(10, np.float32))],
         ["logits"], name="fc", transB=1)
    return b.model("cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])])


def make_bert(layers, hidden=64, heads=4, seq=16, vocab=1000, classes=2, ffn=None, check=True):
    b = Builder(3)
    if hidden % heads != 0:
        raise SystemExit(f"make_models.py: error: --bert-hidden {hidden} is not a multiple of "
                         f"--bert-heads {heads}")
    head_dim = hidden // heads
    ffn = ffn or 4 * hidden
    ids, mask = "input_ids", "attention_mask"
    tok = b.op("Gather", [b.weight("embeddings.token", [vocab, hidden], 0.02), ids], name="embed.token")
    pos = b.weight("embeddings.position", [1, seq, hidden], 0.02)
    h = b.op("Add", [tok, pos], name="embed.add")
    h = b.op("LayerNormalization", [h, b.const("embed.ln.gamma", np.ones(hidden, np.float32)),
                                    b.const("embed.ln.beta", np.zeros(hidden, np.float32))],
             name="embed.ln", axis=-1, epsilon=1e-12)
    # Mask: [N,S] i64 -> bool [N,1,1,S]; masked scores are set to a large negative value.
    mask_b = b.op("Cast", [mask], name="mask.cast", to=TensorProto.BOOL)
    mask_b = b.op("Unsqueeze", [mask_b, b.const("mask.axes", np.array([1, 2], np.int64))], name="mask.unsqueeze")
    neg = b.const("mask.neg", np.array(-1e4, np.float32))

    # The batch dim, read from the graph as exporters do: Shape -> Gather(0) -> Unsqueeze.
    shape = b.op("Shape", [ids], name="batch.shape")
    batch = b.op("Gather", [shape, b.const("batch.idx", np.array(0, np.int64))], name="batch.gather", axis=0)
    batch = b.op("Unsqueeze", [batch, b.const("batch.axes", np.array([0], np.int64))], name="batch.unsqueeze")
    split_shape = b.op("Concat", [batch, b.const("split.rest", np.array([seq, heads, head_dim], np.int64))],
                       name="split.shape", axis=0)
    merge_shape = b.op("Concat", [batch, b.const("merge.rest", np.array([seq, hidden], np.int64))],
                       name="merge.shape", axis=0)
    scale = b.const("attn.scale", np.array(np.sqrt(head_dim), np.float32))
    half = b.const("gelu.half", np.array(0.5, np.float32))
    one = b.const("gelu.one", np.array(1.0, np.float32))
    sqrt2 = b.const("gelu.sqrt2", np.array(np.sqrt(2.0), np.float32))

    for i in range(layers):
        p = f"layer{i}"

        def dense(x, din, dout, name):
            y = b.op("MatMul", [x, b.weight(f"{p}.{name}.weight", [din, dout])], name=f"{p}.{name}.matmul")
            return b.op("Add", [y, b.const(f"{p}.{name}.bias", np.zeros(dout, np.float32))], name=f"{p}.{name}.add")

        def layer_norm(x, name):
            gamma = b.const(f"{name}.gamma", np.ones(hidden, np.float32))
            beta = b.const(f"{name}.beta", np.zeros(hidden, np.float32))
            return b.op("LayerNormalization", [x, gamma, beta], name=name, axis=-1, epsilon=1e-12)

        def heads_of(x, name):
            y = b.op("Reshape", [x, split_shape], name=f"{p}.{name}.reshape")
            return b.op("Transpose", [y], name=f"{p}.{name}.transpose", perm=[0, 2, 1, 3])

        q = heads_of(dense(h, hidden, hidden, "q"), "q")
        k = heads_of(dense(h, hidden, hidden, "k"), "k")
        v = heads_of(dense(h, hidden, hidden, "v"), "v")
        kt = b.op("Transpose", [k], name=f"{p}.kt", perm=[0, 1, 3, 2])
        s = b.op("MatMul", [q, kt], name=f"{p}.scores")
        s = b.op("Div", [s, scale], name=f"{p}.scale")
        s = b.op("Where", [mask_b, s, neg], name=f"{p}.mask")
        a = b.op("Softmax", [s], name=f"{p}.softmax", axis=-1)
        c = b.op("MatMul", [a, v], name=f"{p}.context")
        c = b.op("Transpose", [c], name=f"{p}.context.transpose", perm=[0, 2, 1, 3])
        c = b.op("Reshape", [c, merge_shape], name=f"{p}.context.reshape")
        o = dense(c, hidden, hidden, "out")
        h = b.op("Add", [h, o], name=f"{p}.attn.residual")
        h = layer_norm(h, f"{p}.ln1")
        f = dense(h, hidden, ffn, "ffn1")
        g = b.op("Div", [f, sqrt2], name=f"{p}.gelu.div")
        g = b.op("Erf", [g], name=f"{p}.gelu.erf")
        g = b.op("Add", [g, one], name=f"{p}.gelu.add")
        g = b.op("Mul", [f, g], name=f"{p}.gelu.mul")
        g = b.op("Mul", [g, half], name=f"{p}.gelu.half")
        f = dense(g, ffn, hidden, "ffn2")
        h = b.op("Add", [h, f], name=f"{p}.ffn.residual")
        h = layer_norm(h, f"{p}.ln2")

    pooled = b.op("ReduceMean", [h], name="pool", axes=[1], keepdims=0)
    b.op("Gemm", [pooled, b.weight("classifier.weight", [classes, hidden], transposed=True),
                  b.const("classifier.bias", np.zeros(classes, np.float32))],
         ["logits"], name="classifier", transB=1)
    return b.model(
        "bert",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["N", seq]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["N", seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        check=check)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bert-layers", type=int, default=2)
    ap.add_argument("--bert-hidden", type=int, default=64)
    ap.add_argument("--bert-heads", type=int, default=4)
    ap.add_argument("--bert-seq", type=int, default=16)
    ap.add_argument("--bert-ffn", type=int, default=None, help="default: 4 x hidden")
    ap.add_argument("--bert-vocab", type=int, default=1000)
    ap.add_argument("--external-data", action="store_true",
                    help="weights in NAME.onnx.data beside the model")
    ap.add_argument("--only", choices=["mlp", "cnn", "bert"], help="build just this model")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sized = (args.bert_hidden, args.bert_heads, args.bert_seq, args.bert_ffn,
             args.bert_vocab) != (64, 4, 16, None, 1000)
    makers = {"mlp": make_mlp, "cnn": make_cnn,
              "bert": lambda: make_bert(args.bert_layers, hidden=args.bert_hidden,
                                        heads=args.bert_heads, seq=args.bert_seq,
                                        vocab=args.bert_vocab, ffn=args.bert_ffn,
                                        check=not args.external_data)}
    for name, make in makers.items():
        if args.only and name != args.only:
            continue
        if name == "bert" and sized:
            stem = f"bert_L{args.bert_layers}_H{args.bert_hidden}_S{args.bert_seq}"
        else:
            stem = name + ("" if name != "bert" or args.bert_layers == 2 else f"{args.bert_layers}")
        path = os.path.join(args.out, f"{stem}.onnx")
        model = make()
        if args.external_data:
            data = os.path.basename(path) + ".data"
            if os.path.exists(os.path.join(args.out, data)):
                os.remove(os.path.join(args.out, data))  # onnx appends to an existing file
            onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                      location=data, size_threshold=1024)
        else:
            onnx.save(model, path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
