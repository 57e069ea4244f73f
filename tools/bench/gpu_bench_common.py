"""What gpu_bench.py and its PyTorch workers (gpu_bench_torch.py) share: the models, the
optimizer's settings, the seed."""

MODELS = {
    "resnet50": {"batch": 128,
                 "desc": "ResNet-50 (torchvision), batch 128, 3x224x224, 1000 classes"},
    "bert": {"batch": 32, "desc": "BERT-base-style encoder (12x768, 12 heads, FFN 3072), "
                                  "batch 32, sequence 128, 2 classes"},
}
SEED = 0
LR, WEIGHT_DECAY = 1e-3, 0.01


def first_line(text):
    """The first non-blank line of `text`, at most 300 characters."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return "(no message)"
