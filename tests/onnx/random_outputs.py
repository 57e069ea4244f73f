"""Property checks for the ONNX node tests whose outputs are random draws.

onnx writes these cases' expected outputs with numpy's generator; a800c (Philox, kernels/common/
philox.h) and onnxruntime draw from their own, so the values cannot match bit for bit. For the
cases listed in RANDOM_CASES, run_node_tests.py checks dtype and shape exactly (as for every
case) and the values by what the op guarantees instead of comparing them:

  - uniform (RandomUniform[Like]): every value in [low, high); with at least MIN_SAMPLES values,
    the mean and the variance within Z standard errors of (low + high) / 2 and (high - low)^2 / 12;
  - normal (RandomNormal[Like]): with at least MIN_SAMPLES values, mean and variance within Z
    standard errors of mean and scale^2;
  - bernoulli: every value 0 or 1, exactly p where p is 0 or 1, and with at least MIN_SAMPLES
    values the count of ones within Z standard deviations of sum(p);
  - binary (onnx's expanded Bernoulli function, whose comparison is its own): every value 0 or 1;
  - op (a one-node model of any of the random ops above): that op's check (check_op);
  - dropout (training-mode Dropout): the mask (when an output) is bool; y == x * scale exactly
    where the mask is true (scale = 1 / (1 - ratio), as x / (1 - ratio) or x * scale in the
    output's type) and 0 elsewhere; the kept fraction within Z binomial standard deviations of
    1 - ratio; ratio 0 (or training off) gives y == x and an all-true mask exactly.

`check(case, model, inputs, outputs)` returns (ok, message); random_outputs_test.py checks that
it fails on wrong outputs.
"""
import math

import numpy as np
import onnx

# How many standard errors a statistic may stray (a false failure about once in 15,000 runs).
Z = 4.0
# Fewer values than this: no statistic is checked (too few to say anything).
MIN_SAMPLES = 100

# Case -> kind of check.
RANDOM_CASES = {
    "test_bernoulli": "bernoulli",
    "test_bernoulli_double": "bernoulli",
    "test_bernoulli_seed": "bernoulli",
    "test_bernoulli_expanded": "binary",
    "test_bernoulli_double_expanded": "binary",
    "test_bernoulli_seed_expanded": "binary",
    "test_training_dropout": "dropout",
    "test_training_dropout_default": "dropout",
    "test_training_dropout_default_mask": "dropout",
    "test_training_dropout_mask": "dropout",
    "test_training_dropout_zero_ratio": "dropout",
    "test_training_dropout_zero_ratio_mask": "dropout",
}


def is_random_case(case):
    return case in RANDOM_CASES


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _node(model, op_type):
    nodes = [n for n in model.graph.node if n.op_type == op_type]
    if len(nodes) != 1:
        raise ValueError(f"expected one {op_type} node, found {len(nodes)}")
    return nodes[0]


def _moments(values, mean, var, fourth, what):
    """Sample mean and variance of `values` against a distribution's mean, variance and fourth
    central moment; an error message or None."""
    v = values.astype(np.float64).ravel()
    n = v.size
    if n < MIN_SAMPLES:
        return None
    m = v.mean()
    if abs(m - mean) > Z * math.sqrt(var / n):
        return f"{what}: mean {m:.6g} is more than {Z} standard errors from {mean:.6g}"
    s2 = v.var(ddof=1)
    se_var = math.sqrt(max(fourth - var * var, 0.0) / n)
    if abs(s2 - var) > Z * se_var:
        return f"{what}: variance {s2:.6g} is more than {Z} standard errors from {var:.6g}"
    return None


def check_uniform(y, low, high, what="uniform"):
    v = y.astype(np.float64)
    if v.size and not (np.all(v >= low) and np.all(v < high)):
        return f"{what}: values outside [{low}, {high}): min {v.min():.6g}, max {v.max():.6g}"
    w = high - low
    return _moments(v, (low + high) / 2, w * w / 12, w ** 4 / 80, what)


def check_normal(y, mean, scale, what="normal"):
    v = y.astype(np.float64)
    if not np.all(np.isfinite(v)):
        return f"{what}: non-finite values"
    var = scale * scale
    return _moments(v, mean, var, 3 * var * var, what)


def check_binary(y, what="bernoulli"):
    v = y.astype(np.float64)
    if not np.all((v == 0) | (v == 1)):
        return f"{what}: values other than 0 and 1"
    return None


def check_bernoulli(y, p, what="bernoulli"):
    err = check_binary(y, what)
    if err:
        return err
    v, p = y.astype(np.float64).ravel(), p.astype(np.float64).ravel()
    if v.shape != p.shape:
        return f"{what}: {v.size} values for {p.size} probabilities"
    for edge in (0.0, 1.0):
        if np.any(v[p == edge] != edge):
            return f"{what}: a value where p = {edge:g} is not {edge:g}"
    if v.size >= MIN_SAMPLES:
        sd = math.sqrt(float(np.sum(p * (1 - p))))
        if abs(v.sum() - p.sum()) > Z * max(sd, 1e-12):
            return (f"{what}: {v.sum():g} ones where {p.sum():.6g} are expected "
                    f"(more than {Z} standard deviations)")
    return None


def check_dropout(x, ratio, training, y, mask=None, what="dropout"):
    """Training-mode Dropout: the checks of the module docstring."""
    if mask is not None and mask.dtype != np.bool_:
        return f"{what}: the mask is {mask.dtype}, not bool"
    if y.shape != x.shape or (mask is not None and mask.shape != x.shape):
        return f"{what}: output shapes differ from the input's {list(x.shape)}"
    if not training or ratio == 0:
        if not np.array_equal(y, x):
            return f"{what}: with ratio 0 or training off, the output must equal the input"
        if mask is not None and not mask.all():
            return f"{what}: with ratio 0 or training off, the mask must be all true"
        return None
    if mask is None:  # the kept elements are those not zeroed (a zero input tells nothing)
        mask = y != 0
        known = x != 0
    else:
        known = np.ones(x.shape, dtype=bool)
    t = x.dtype.type
    by_div = x / t(1 - ratio)
    by_mul = x * t(1 / t(1 - ratio))
    kept = y[mask]
    if not (np.array_equal(kept, by_div[mask]) or np.array_equal(kept, by_mul[mask])):
        return f"{what}: a kept element is not x / (1 - ratio)"
    if np.any(y[~mask] != 0):
        return f"{what}: a dropped element is not 0"
    n = int(known.sum())
    if n:
        k = int((mask & known).sum())
        sd = math.sqrt(n * ratio * (1 - ratio))
        if abs(k - n * (1 - ratio)) > Z * sd:
            return (f"{what}: {k} of {n} elements kept, {n * (1 - ratio):.4g} expected at "
                    f"ratio {ratio} (more than {Z} standard deviations)")
    return None


def check_op(op, attrs, inputs, y):
    """The property check of one random op's output `y`, given its attributes and inputs (in
    order); an error message or None."""
    if op in ("RandomUniform", "RandomUniformLike"):
        return check_uniform(y, attrs.get("low", 0.0), attrs.get("high", 1.0), op)
    if op in ("RandomNormal", "RandomNormalLike"):
        return check_normal(y, attrs.get("mean", 0.0), attrs.get("scale", 1.0), op)
    if op == "Bernoulli":
        return check_bernoulli(y, inputs[0], op)
    raise ValueError(f"{op} is not a random op")


def check(case, model, inputs, outputs):
    """The property check of `case`. inputs: {graph input name: array}; outputs: the arrays in
    the graph's output order. Returns (ok, message)."""
    kind = RANDOM_CASES[case]
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    err = None
    if kind in ("bernoulli", "binary"):
        p = inputs[in_names[0]]
        err = check_bernoulli(outputs[0], p) if kind == "bernoulli" else check_binary(outputs[0])
    elif kind == "dropout":
        node = _node(model, "Dropout")
        ins = list(node.input) + [""] * 3
        x = inputs[ins[0]]
        ratio = float(inputs[ins[1]]) if ins[1] else 0.5
        training = bool(inputs[ins[2]]) if ins[2] else False
        mask = outputs[1] if len(outputs) > 1 else None
        err = check_dropout(x, ratio, training, outputs[0], mask)
    elif kind == "op":  # a one-node model of a random op
        node = model.graph.node[0]
        err = check_op(node.op_type, _attrs(node), [inputs.get(i) for i in node.input],
                       outputs[0])
    else:
        raise ValueError(f"{case}: unknown random check '{kind}'")
    if err:
        return False, f"output '{out_names[0]}' fails the {kind} property check: {err}"
    return True, "ok (random: checked by properties)"
