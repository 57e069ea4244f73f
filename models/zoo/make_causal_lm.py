#!/usr/bin/env python3
"""Makes models/zoo/tiny_gpt2/: a tiny GPT-2 causal LM exported by PyTorch's dynamo exporter, with
PyTorch's own training curves, for tests/e2e/causal_lm.py; and models/zoo/tiny_lm_torchscript/:
a smaller token model exported by the TorchScript exporter (torch.onnx.export(dynamo=False);
transformers' GPT-2 no longer exports that way: aten::diff), with its parameter names and AdamW
curve. Run by hand (needs torch, onnxscript, transformers; never the build or CI):

    python3 -m venv /work/venv-torch && /work/venv-torch/bin/pip install torch onnxscript onnx \
        transformers
    /work/venv-torch/bin/python models/zoo/make_causal_lm.py

The dynamo exporter stores the model's constants as float initializers named val_N (GELU's
exponent 3.0, the attention scale, the causal mask's fill value), next to the module's
parameters, which keep their state_dict names. The files:

- model.onnx: GPT-2 (vocab 64, 16 positions, 2 layers of width 32, 2 heads, gelu_new, untied LM
  head; parameters perturbed so that no two are equal, as in a trained model), input
  `input_ids` i64[4,16], output `logits` f32[4,16,64]; weights inside (float initializers).
- params.txt: named_parameters() of the exported module, one a line: the name, then the name of
  the initializer that holds it in model.onnx (the same, or the name constant folding gave it).
- input_ids.npy, labels.npy: the fixed batch; labels are the next tokens with the last position
  and a few random ones set to -100 (ignored).
- loss_adamw.npy: the loss at each of 20 AdamW steps (lr 1e-3, PyTorch's defaults: betas 0.9,
  0.999, eps 1e-8, weight decay 0.01) of CrossEntropyLoss(logits.view(-1, V), labels.view(-1)).
- loss_sgd_shift.npy: 20 SGD steps (lr 0.1) of transformers' own LM loss, labels=input_ids (it
  shifts: logits at t score the token at t + 1): a800c's --shift-labels.
- tiny_lm_torchscript/: model.onnx, params.txt and loss_adamw.npy as above, for the token model
  (same input_ids.npy and labels.npy as tiny_gpt2).
"""
import os

import numpy as np
import torch
import transformers

ZOO = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(ZOO, "tiny_gpt2")
BATCH, SEQ, VOCAB, STEPS = 4, 16, 64, 20


class CausalLM(torch.nn.Module):
    """GPT2LMHeadModel returning the logits only (the exported graph's one output)."""

    def __init__(self):
        super().__init__()
        config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2,
                                         n_head=2, n_inner=64, activation_function="gelu_new",
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         tie_word_embeddings=False)
        config._attn_implementation = "eager"
        self.gpt = transformers.GPT2LMHeadModel(config)

    def forward(self, input_ids):
        return self.gpt(input_ids=input_ids, use_cache=False).logits


def perturbed(make, seed):
    """make() built after seeding with `seed`, each parameter perturbed by 0.02 N(0, 1): as a
    pretrained model, no two parameters hold equal values (a fresh GPT-2 has zero biases and unit
    LayerNorm weights, which exporters merge into one initializer)."""
    torch.manual_seed(seed)
    m = make()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return m


def fresh_model():
    m = perturbed(CausalLM, 0)
    m.eval()  # no dropout (all 0 anyway); train() and eval() give the same math here
    return m


def write_params(model, path, out=OUT):
    """params.txt: each named parameter and the initializer that holds it in the export. The
    exporter's constant folding renames a parameter it transforms (position embeddings gathered
    at fixed positions become `embedding_1`, the LM head's weight transposed for Gemm `val_N`);
    make_zoo.write_params finds such a tensor by its values."""
    from make_zoo import write_params as write_params_file

    write_params_file(model, path, os.path.join(out, "params.txt"))


def curve(model, ids, labels, optimizer, shift):
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        logits = model(ids)
        if shift:
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1, :].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        else:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                                     labels.reshape(-1), ignore_index=-100)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses, dtype=np.float64)


class TinyTokenLM(torch.nn.Module):
    """Embedding + learned positions, Linear, tanh GELU, LayerNorm, Linear head: [B, T, V]."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 32)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(SEQ, 32))
        self.fc = torch.nn.Linear(32, 64)
        self.act = torch.nn.GELU(approximate="tanh")
        self.norm = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, VOCAB)

    def forward(self, input_ids):
        return self.head(self.norm(self.act(self.fc(self.embed(input_ids) + self.pos))))


def fresh_token_lm():
    return perturbed(TinyTokenLM, 1)


def torchscript_model(ids, labels):
    out = os.path.join(ZOO, "tiny_lm_torchscript")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    model = fresh_token_lm()
    torch.onnx.export(model, (torch.from_numpy(ids),), path, dynamo=False, opset_version=17,
                      input_names=["input_ids"], output_names=["logits"])
    write_params(model, path, out)
    m = fresh_token_lm()
    adamw = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                              weight_decay=0.01)
    np.save(os.path.join(out, "loss_adamw.npy"),
            curve(m, torch.from_numpy(ids), torch.from_numpy(labels), adamw, shift=False))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, size=(BATCH, SEQ), dtype=np.int64)
    labels = np.full_like(ids, -100)
    labels[:, :-1] = ids[:, 1:]
    labels[rng.random(labels.shape) < 0.1] = -100
    np.save(os.path.join(OUT, "input_ids.npy"), ids)
    np.save(os.path.join(OUT, "labels.npy"), labels)

    model = fresh_model()
    path = os.path.join(OUT, "model.onnx")
    # The exporter's defaults (optimize=True: constants folded and lifted to initializers).
    torch.onnx.export(model, (torch.from_numpy(ids),), path, dynamo=True,
                      input_names=["input_ids"], output_names=["logits"], external_data=False)
    write_params(model, path)

    t_ids, t_labels = torch.from_numpy(ids), torch.from_numpy(labels)
    m = fresh_model()
    adamw = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                              weight_decay=0.01)
    np.save(os.path.join(OUT, "loss_adamw.npy"), curve(m, t_ids, t_labels, adamw, shift=False))
    m = fresh_model()
    sgd = torch.optim.SGD(m.parameters(), lr=0.1)
    np.save(os.path.join(OUT, "loss_sgd_shift.npy"), curve(m, t_ids, t_labels, sgd, shift=True))
    torchscript_model(ids, labels)
    print(f"wrote {OUT}: torch {torch.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
