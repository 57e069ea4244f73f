#!/usr/bin/env python3
"""Makes the model zoo: tiny configurations of real architectures as PyTorch exports them, each
with PyTorch's own reference on fixed data, for tests/e2e/zoo.py. Run by hand (torch,
torchvision, transformers, onnxscript; never the build or CI):

    /work/venv-torch/bin/pip install torch torchvision onnxscript onnx transformers
    /work/venv-torch/bin/python models/zoo/make_zoo.py [--controls] [NAME ...]

(--controls: only recompute meta.json's PyTorch autocast controls and spread of existing models.)

Each model gets models/zoo/NAME/ (models/zoo/README.md lists them and what each shows):

- model.onnx: the dynamo exporter's graph (torch.onnx.export(dynamo=True), opset 18+, with
  optimize=False except DYNAMO_OPTIMIZE: its optimizer folds BatchNorm into Conv and tied
  weights' transposes into new constants, which then would train apart); model_ts.onnx: the
  TorchScript exporter's (dynamo=False, opset 17 or TS_OPSET), where it works, in training mode
  (TrainingMode.TRAINING, no constant folding: in eval mode it folds BatchNorm into Conv).
  Dropout is 0 everywhere; a800c trains BatchNormalization on batch statistics, as
  model.train().
- params.txt / params_ts.txt: named_parameters(), each with the initializer that holds it.
- the inputs (input_ids.npy, pixel_values.npy, decoder_input_ids.npy) and labels.npy;
- logits.npy: the eval-mode output on that batch (logits_train.npy: in train mode, where
  BatchNorm makes them differ);
- loss_sgd.npy, loss_adamw.npy: the loss at each of 20 steps, in fp32, of SGD (lr 0.1) and AdamW
  (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01) with model.train(), of PyTorch's
  cross_entropy (mean over the labels that are not -100);
- meta.json: what the test needs (inputs, the class axis, the exporters and why one failed), and
  the controls: the largest relative difference between PyTorch's float32 curve and the same
  run in float64 (the floor under any comparison of float32 curves), and between its autocast
  curves (float16 with GradScaler, bfloat16) and its float32 ones, once from the zoo's start
  (pytorch_autocast_vs_fp32) and from 8 starts (pytorch_autocast_spread, which the test reads).

Parameters are seeded and perturbed so that no two are equal (exporters merge equal
initializers; a fresh model has zero biases and unit norm weights).
"""
import json
import os
import sys
import traceback

import numpy as np
import torch

ZOO = os.path.dirname(os.path.abspath(__file__))
STEPS = 20
IMAGE_BATCH, IMAGE_SIZE, IMAGE_CLASSES = 8, 32, 10
BATCH, SEQ, VOCAB = 4, 16, 64


# ---- the models ---------------------------------------------------------------------------------

def resnet18():
    """torchvision's ResNet with ResNet-18's layout ([2, 2, 2, 2] BasicBlocks, stride-2 stages,
    1x1 downsample shortcuts) at widths 8-64 instead of 64-512 (torchvision fixes the widths)."""
    from torchvision.models import resnet

    class TinyResNet(resnet.ResNet):
        def __init__(self):
            torch.nn.Module.__init__(self)
            self._norm_layer, self.dilation, self.groups, self.base_width = (
                torch.nn.BatchNorm2d, 1, 1, 64)
            self.inplanes = 8
            self.conv1 = torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(8)
            self.relu = torch.nn.ReLU(inplace=True)
            self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
            self.layer1 = self._make_layer(resnet.BasicBlock, 8, 2)
            self.layer2 = self._make_layer(resnet.BasicBlock, 16, 2, stride=2)
            self.layer3 = self._make_layer(resnet.BasicBlock, 32, 2, stride=2)
            self.layer4 = self._make_layer(resnet.BasicBlock, 64, 2, stride=2)
            self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
            self.fc = torch.nn.Linear(64, IMAGE_CLASSES)

    return TinyResNet()


def mobilenet_v3_small():
    from torchvision.models import mobilenetv3
    setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    return mobilenetv3.MobileNetV3(setting, last, num_classes=IMAGE_CLASSES, dropout=0.0)


def efficientnet():
    from torchvision.models import efficientnet as en
    setting, last = en._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return en.EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0,
                           num_classes=IMAGE_CLASSES, last_channel=last)


def vit_tiny():
    from torchvision.models import vision_transformer as vt
    return vt.VisionTransformer(image_size=IMAGE_SIZE, patch_size=8, num_layers=2, num_heads=2,
                                hidden_dim=32, mlp_dim=64, num_classes=IMAGE_CLASSES)


class Logits(torch.nn.Module):
    """A transformers model returning its logits only (the export's one output)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        kwargs = dict(zip(self.input_names, args))
        if self.cache:
            kwargs["use_cache"] = False
        return self.model(**kwargs, return_dict=True).logits


def eager(config):
    config._attn_implementation = "eager"  # plain ops, not scaled_dot_product_attention
    return config


def hf(model, input_names, cache=True):
    wrapped = Logits(model)
    wrapped.input_names, wrapped.cache = input_names, cache
    return wrapped


def bert():
    import transformers
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=SEQ, num_labels=4,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return hf(transformers.BertForSequenceClassification(eager(config)), ["input_ids"], cache=False)


def gpt2():
    import transformers
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2,
                                     n_head=2, n_inner=64, activation_function="gelu_new",
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     tie_word_embeddings=True)
    return hf(transformers.GPT2LMHeadModel(eager(config)), ["input_ids"])


def llama():
    import transformers
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=SEQ,
                                      rms_norm_eps=1e-6, tie_word_embeddings=False)
    return hf(transformers.LlamaForCausalLM(eager(config)), ["input_ids"])


def t5():
    import transformers
    config = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                   num_decoder_layers=2, num_heads=4,
                                   relative_attention_num_buckets=8,
                                   relative_attention_max_distance=16, dropout_rate=0.0,
                                   feed_forward_proj="relu", tie_word_embeddings=True,
                                   decoder_start_token_id=0, pad_token_id=0)
    return hf(transformers.T5ForConditionalGeneration(eager(config)),
              ["input_ids", "decoder_input_ids"])


# name: (builder, kind, what it shows)
MODELS = {
    "resnet18": (resnet18, "image", "ResNet-18 layout: Conv, BatchNorm, residual Add, MaxPool"),
    "mobilenet_v3_small": (mobilenet_v3_small, "image",
                           "HardSwish, HardSigmoid squeeze-excitation, depthwise Conv"),
    "efficientnet": (efficientnet, "image", "EfficientNet-B0 style: SiLU, MBConv, SE"),
    "vit_tiny": (vit_tiny, "image", "patch Conv, class token, LayerNorm, GELU, attention"),
    "bert": (bert, "classify", "BertForSequenceClassification: token types, pooler, tanh"),
    "gpt2": (gpt2, "lm", "GPT2LMHeadModel: causal mask, tied embeddings, per-token loss"),
    "llama": (llama, "lm", "LlamaForCausalLM: RMSNorm, rotary, SwiGLU, grouped-query attention"),
    "t5": (t5, "seq2seq", "T5ForConditionalGeneration: relative position bias, encoder-decoder"),
}


# ---- data, references, exports ------------------------------------------------------------------

# The TorchScript exporter's opset where it is not 17: at 13 it writes HardSwish as
# x * HardSigmoid(x) (HardSwish is opset 14; a800c had none when this export was made), and
# BatchNorm's training form as BatchNormalization-9 with 5 outputs, which a800c's import upgrades
# to version 14's training_mode=1 (kept at 13: the zoo's one export of that form).
TS_OPSET = {"mobilenet_v3_small": 13}
# The dynamo exporter's optimizer, per model (none now): it folds computations on parameters and
# buffers into new initializers named after ops. Llama was exported with it on while a800c had no
# GatherND (transformers' mask indexing), and its rotary cos/sin tables then became initializers
# that only --freeze could keep constant; unoptimized, inv_freq stays a BUFFER of the graph
# signature, which a800c's import keeps constant.
DYNAMO_OPTIMIZE = {}

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                         weight_decay=0.01),
}

def stabilise(model):
    """Image models: the classifier and the last BatchNorm of every residual branch start at 0.1x
    (torchvision's zero_init_residual, not quite zero so no two parameters are equal). Without
    it, 20 SGD steps at lr 0.1 on these BatchNorm nets are chaotic: PyTorch's own float64 run
    leaves its float32 run by 2-13% (make_zoo.py --check-chaos), and no implementation could
    follow the curve to 1e-3."""
    from torchvision.models import resnet
    for module in model.modules():
        if isinstance(module, resnet.BasicBlock):
            module.bn2.weight.mul_(0.1)
        elif getattr(module, "use_res_connect", False):  # MobileNetV3's and EfficientNet's blocks
            module.block[-1][1].weight.mul_(0.1)
        elif isinstance(module, torch.nn.Linear) and module.out_features == IMAGE_CLASSES:
            module.weight.mul_(0.1)
            module.bias.mul_(0.1)


def fresh(name):
    torch.manual_seed(0)
    model = MODELS[name][0]()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
        if MODELS[name][1] == "image":
            stabilise(model)
        for key, b in model.named_buffers():
            if key.endswith("running_mean"):
                b.add_(0.1 * torch.randn_like(b))
            elif key.endswith("running_var"):
                b.mul_(1 + 0.2 * torch.rand_like(b))
    return model


def data(kind):
    """The fixed batch: inputs in the forward's order, and the labels."""
    rng = np.random.default_rng(0)
    if kind == "image":
        x = rng.standard_normal((IMAGE_BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)
        return {"pixel_values": x}, rng.integers(0, IMAGE_CLASSES, IMAGE_BATCH, dtype=np.int64)
    ids = rng.integers(1, VOCAB, size=(BATCH, SEQ), dtype=np.int64)
    if kind == "classify":
        return {"input_ids": ids}, rng.integers(0, 4, BATCH, dtype=np.int64)
    if kind == "lm":  # the next token, the last position and about 10% ignored
        labels = np.full_like(ids, -100)
        labels[:, :-1] = ids[:, 1:]
    else:  # seq2seq: the decoder reads the target shifted right after the start token 0
        labels = rng.integers(1, VOCAB, size=(BATCH, SEQ // 2), dtype=np.int64)
        decoder = np.zeros_like(labels)
        decoder[:, 1:] = labels[:, :-1]
    labels[rng.random(labels.shape) < 0.1] = -100
    if kind == "lm":
        return {"input_ids": ids}, labels
    return {"input_ids": ids, "decoder_input_ids": decoder}, labels


def curve(name, inputs, labels, make_optimizer, dtype=torch.float32, autocast=None, skipped=None):
    """The loss at each step; `autocast`: the forward under torch.autocast("cpu", autocast);
    `skipped`: a list that gets, per step, whether GradScaler skipped it (overflow)."""
    model = fresh(name).to(dtype)
    model.train()
    optimizer = make_optimizer(model.parameters())
    # float16 autocast as PyTorch's AMP recipe: with GradScaler (init scale 65536, as a800c's amp),
    # which skips the first steps whose scaled gradients overflow.
    scaler = torch.amp.GradScaler("cpu") if autocast == torch.float16 else None
    args = [torch.from_numpy(v).to(dtype) if v.dtype == np.float32 else torch.from_numpy(v)
            for v in inputs.values()]
    target = torch.from_numpy(labels)
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=bool(autocast)):
            logits = model(*args).float()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 target.reshape(-1), ignore_index=-100)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scale = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if skipped is not None:  # the scale backs off exactly when the step was skipped
                skipped.append(scaler.get_scale() < scale)
        if skipped is not None and scaler is None:
            skipped.append(False)
        losses.append(loss.item())
    return np.array(losses, dtype=np.float64)


def deviation(losses, ref, skipped=None):
    """The largest relative step difference from the float32 curve `ref`, as tests/e2e/zoo.py
    measures a800c's: a step the loss scaler skipped left the weights as they were, so each loss
    is compared with `ref`'s after as many updates."""
    skipped = np.zeros(len(losses), bool) if skipped is None else np.array(skipped, bool)
    updates = np.concatenate([[0], np.cumsum(~skipped)[:-1]])
    return float((np.abs(losses - ref[updates]) / np.abs(ref[updates])).max())


def write_params(model, path, out):
    """Each named parameter and the initializer that holds it (the same name, or the one constant
    folding gave it: found by its values, equal reshaped or transposed)."""
    import onnx
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    lines = []
    for name, p in model.named_parameters():
        value = p.detach().numpy()
        if name in inits:
            lines.append(f"{name} {name}")
            continue
        held = [k for k, v in inits.items() if v.dtype == value.dtype and v.size == value.size
                and (np.array_equal(v.reshape(value.shape), value)
                     or (value.ndim == 2 and np.array_equal(v, value.T)))]
        if len(held) != 1:
            raise RuntimeError(f"{name}: held by {held or 'no initializer'} in {path}")
        lines.append(f"{name} {held[0]}")
    with open(out, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def summary(error):
    """One line: the exporter's own cause (its ConversionError's "Exception summary")."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if "## Exception summary" in lines:
        return lines[lines.index("## Exception summary") + 1]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def export(name, inputs, out, dynamo):
    import onnx
    model = fresh(name).train()
    path = os.path.join(out, "model.onnx" if dynamo else "model_ts.onnx")
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    names = dict(input_names=list(inputs), output_names=["logits"])
    if dynamo:
        # optimize=False: the exporter's optimizer folds computations on parameters into new
        # constants (BatchNorm into the Conv before it, even from a model in train mode; a tied
        # weight's transpose; token-type embeddings gathered at fixed ids), and training those
        # trains another model. The graph as translated keeps every parameter and its uses.
        torch.onnx.export(model, args, path, dynamo=True, external_data=False,
                          optimize=DYNAMO_OPTIMIZE.get(name, False), **names)
    else:
        opset = TS_OPSET.get(name, 17)
        torch.onnx.export(model, args, path, dynamo=False, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          **names)
    write_params(model, path, os.path.join(out, "params.txt" if dynamo else "params_ts.txt"))
    graph = onnx.load(path)
    return {"file": os.path.basename(path), "opset": graph.opset_import[0].version,
            "nodes": len(graph.graph.node), "bytes": os.path.getsize(path)}


def make(name):
    builder, kind, shows = MODELS[name]
    out = os.path.join(ZOO, name)
    os.makedirs(out, exist_ok=True)
    inputs, labels = data(kind)
    for key, value in inputs.items():
        np.save(os.path.join(out, f"{key}.npy"), value)
    np.save(os.path.join(out, "labels.npy"), labels)
    # logits.npy: eval mode (BatchNorm on running statistics, as the dynamo export writes it);
    # logits_train.npy where it differs: batch statistics (the TorchScript export in training
    # mode writes BatchNormalization with training_mode=1).
    with torch.no_grad():
        args = [torch.from_numpy(v) for v in inputs.values()]
        logits = fresh(name).eval()(*args)
        logits_train = fresh(name).train()(*args)
    np.save(os.path.join(out, "logits.npy"), logits.numpy())
    if not torch.equal(logits, logits_train):
        np.save(os.path.join(out, "logits_train.npy"), logits_train.numpy())
    # The control: the same run in float64. Where PyTorch's own float32 curve leaves it by more
    # than a small fraction of the test's 1e-3, the curve is chaotic and cannot be followed.
    chaos = {}
    for optimizer, make_optimizer in OPTIMIZERS.items():
        losses = curve(name, inputs, labels, make_optimizer)
        np.save(os.path.join(out, f"loss_{optimizer}.npy"), losses)
        exact = curve(name, inputs, labels, make_optimizer, torch.float64)
        chaos[optimizer] = float((np.abs(losses - exact) / np.abs(exact)).max())
    exporters = {}
    for exporter, dynamo in (("dynamo", True), ("torchscript", False)):
        try:
            exporters[exporter] = export(name, inputs, out, dynamo)
        except Exception as e:  # recorded: the README lists which exporter fails and why
            exporters[exporter] = {"error": summary(e)}
            traceback.print_exc()
    if "file" in exporters["torchscript"] and not torch.equal(logits, logits_train):
        exporters["torchscript"]["logits_reference"] = "logits_train.npy"
    meta = {"kind": kind, "shows": shows, "inputs": list(inputs), "logits": list(logits.shape),
            "class_axis": -1 if logits.dim() == 3 else None,
            "parameters": sum(p.numel() for p in fresh(name).parameters()),
            "pytorch_fp32_vs_fp64": chaos,
            "exporters": exporters}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{name}: {json.dumps(exporters)}; PyTorch fp32 vs fp64: {chaos}")


def autocast_controls(name):
    """meta.json's pytorch_autocast_vs_fp32: how far PyTorch's own autocast curves (float16 with
    GradScaler, and bfloat16, on the CPU) go from its float32 ones, the largest relative step
    difference: the
    scale against which a800c's amp and bf16 curves are judged."""
    out = os.path.join(ZOO, name)
    inputs, labels = data(MODELS[name][1])
    controls = {}
    for optimizer, make_optimizer in OPTIMIZERS.items():
        ref = np.load(os.path.join(out, f"loss_{optimizer}.npy"))
        for low, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            losses = curve(name, inputs, labels, make_optimizer, autocast=dtype)
            controls.setdefault(low, {})[optimizer] = float((np.abs(losses - ref) / ref).max())
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    meta["pytorch_autocast_vs_fp32"] = controls
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{name}: PyTorch autocast vs fp32: {controls}")


def autocast_spread(name, n=8, rel=1e-6):
    """meta.json's pytorch_autocast_spread, which bounds the zoo test's amp and bf16 curves: the
    autocast control from n starting points (autocast_spread.py --store)."""
    import autocast_spread as spread
    for optimizer in OPTIMIZERS:
        for low in spread.DTYPES:
            spread.store(name, low, optimizer, spread.spread(name, optimizer, low, n, rel), n, rel)


def main():
    import torchvision
    import transformers
    args = sys.argv[1:]
    only_controls = "--controls" in args
    names = [a for a in args if a != "--controls"] or list(MODELS)
    for name in names:
        if not only_controls:
            make(name)
        autocast_controls(name)
        autocast_spread(name)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
