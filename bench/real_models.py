"""Real models that nobody here wrote: the test data shipped inside the onnx wheel.

`onnx/backend/test/data/` holds the nine "light" CNN architectures (ResNet-50,
DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet,
ZFNet-512) and three model suites (pytorch-converted, pytorch-operator,
simple). The light models build every weight with `ConstantOfShape` filled
with 0.02, which hides wrong indexing (every weight is the same number);
`with_random_weights` re-draws them at a scale that keeps activations
finite through 50+ layers, as initializers, so the files also serve as
benchmarks of realistic models.

Used by the benchmarks in this folder and by the tests (tests/conftest.py
puts this folder on `sys.path`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from byoc.frontend.onnx.shipped import (  # noqa: F401 - re-exported for the benchmarks
    LIGHT_MODELS,
    SUITES,
    light_model_path,
    model_dirs,
    test_data_dir,
)


def light_model_output(name: str) -> np.ndarray:
    """The output onnx ships for light model `name` on `runner_inputs`."""
    import onnx
    from onnx import numpy_helper

    tensor = onnx.load_tensor(str(test_data_dir() / "light" / f"light_{name}_output_0.pb"))
    return numpy_helper.to_array(tensor)


def runner_inputs(model) -> list[np.ndarray]:  # noqa: ANN001 - an onnx.ModelProto
    """The inputs onnx's backend test runner feeds a light model: for each graph
    input that is not an initializer, `arange(n) / n` in the input's shape."""
    initializers = {t.name for t in model.graph.initializer}
    arrays = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        n = math.prod(shape)
        arrays.append((np.arange(n, dtype=np.float32) / n).reshape(shape))
    return arrays


# --- Random weights -------------------------------------------------------------

# How a weight is used decides its scale: what keeps a deep net's activations
# near 1, as He initialisation and trained batch-norm statistics do.
_CONSUMER_ROLES = {
    ("Conv", 1): "kernel",
    ("ConvTranspose", 1): "kernel",
    ("Gemm", 1): "kernel",
    ("MatMul", 1): "kernel",
    ("Conv", 2): "shift",
    ("Gemm", 2): "shift",
    ("BatchNormalization", 1): "scale",
    ("BatchNormalization", 2): "shift",
    ("BatchNormalization", 3): "shift",
    ("BatchNormalization", 4): "variance",
    ("Mul", 0): "scale",
    ("Mul", 1): "scale",
    ("Add", 0): "shift",
    ("Add", 1): "shift",
    ("Sum", 0): "shift",
    ("Sum", 1): "shift",
}


def _draw(role: str, shape: tuple[int, ...], rng: np.random.Generator, gemm_transposed: bool) -> np.ndarray:
    if role == "kernel":
        fan_in = math.prod(shape[1:]) if len(shape) > 1 and not gemm_transposed else shape[0]
        return (rng.standard_normal(shape) * math.sqrt(2.0 / max(fan_in, 1))).astype(np.float32)
    if role in ("scale", "variance"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return (rng.standard_normal(shape) * 0.1).astype(np.float32)


def with_random_weights(model, seed: int = 0):  # noqa: ANN001, ANN201 - onnx.ModelProto
    """A copy of `model` whose `ConstantOfShape` weights (and float initializers)
    are random initializers, scaled by how each is used (see `_CONSUMER_ROLES`).

    Shape-computing `ConstantOfShape` nodes (non-float values) stay as they are.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    rng = np.random.default_rng(seed)
    initializers = {t.name: t for t in graph.initializer}
    roles: dict[str, str] = {}
    transposed: dict[str, bool] = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            role = _CONSUMER_ROLES.get((node.op_type, i))
            if role and name not in roles:
                roles[name] = role
                # Gemm's B is [K, N] unless transB: its fan-in is then dim 0.
                trans_b = any(a.name == "transB" and a.i for a in node.attribute)
                transposed[name] = node.op_type in ("Gemm", "MatMul") and not trans_b

    def random_tensor(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        array = _draw(roles.get(name, "shift"), shape, rng, transposed.get(name, False))
        return numpy_helper.from_array(array, name)

    kept = []
    new_initializers = []
    for node in graph.node:
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        is_float_fill = value is None or value.data_type == onnx.TensorProto.FLOAT
        if node.op_type == "ConstantOfShape" and is_float_fill and node.input[0] in initializers:
            shape = tuple(int(d) for d in numpy_helper.to_array(initializers[node.input[0]]))
            new_initializers.append(random_tensor(node.output[0], shape))
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    for i, tensor in enumerate(graph.initializer):
        if tensor.data_type == onnx.TensorProto.FLOAT and tensor.name in roles:
            graph.initializer[i].CopyFrom(random_tensor(tensor.name, tuple(tensor.dims)))
    graph.initializer.extend(new_initializers)
    # Drop the shape initializers nothing reads any more.
    used = {name for node in graph.node for name in node.input}
    used |= {o.name for o in graph.output}
    unused = {t.name for t in graph.initializer if t.name not in used}
    kept_initializers = [t for t in graph.initializer if t.name not in unused]
    del graph.initializer[:]
    graph.initializer.extend(kept_initializers)
    kept_inputs = [i for i in graph.input if i.name not in unused]
    del graph.input[:]
    graph.input.extend(kept_inputs)
    # The weights are initializers now; older IR versions list them as inputs too.
    if model.ir_version < 4:
        graph.input.extend(
            onnx.helper.make_tensor_value_info(t.name, onnx.TensorProto.FLOAT, list(t.dims))
            for t in new_initializers
        )
    return model


def without_final_softmax(model):  # noqa: ANN001, ANN201 - onnx.ModelProto
    """A copy of `model` whose graph output is the input of its final Softmax (the
    logits): with random weights the softmax saturates, so comparing logits is
    the stricter test of everything before it."""
    import onnx

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    last = graph.node[-1]
    if last.op_type != "Softmax" or len(graph.output) != 1 or graph.output[0].name != last.output[0]:
        return model
    logits = last.input[0]
    del graph.node[-1]
    graph.output[0].name = logits
    graph.output[0].type.tensor_type.ClearField("shape")
    return model
