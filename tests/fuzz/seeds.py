"""The inputs the fuzzer mutates: valid models of every kind it feeds byoc."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


FUNCTION = re.compile(r"^func\.func @(\w+)\(.*?^\}$", re.M | re.S)


def mlir_seeds() -> list[tuple[str, str]]:
    """The example model and the FileCheck tests' cases: each `@main` case,
    and each other function of a case made `@main` on its own. Mostly valid
    models (four in five draws), so that mutants reach beyond the verifier;
    the rest are invalid cases, whose mutants may be valid."""
    from byoc.frontend.diagnostics import ByocError
    from byoc.frontend.parse import parse_text
    from byoc.runtime.build import main_function

    candidates = [("byoc_guide.mlir", (REPO / "examples" / "byoc_guide.mlir").read_text())]
    for path in sorted((REPO / "tests" / "filecheck").rglob("*.mlir")):
        name = path.relative_to(REPO / "tests" / "filecheck")
        for i, case in enumerate(re.split(r"^// -----\s*$", path.read_text(), flags=re.M)):
            body = "\n".join(line for line in case.splitlines() if not line.lstrip().startswith("//"))
            if len(body) > 6000:
                continue
            if "func.func @main" in body:
                candidates.append((f"{name}#{i}", body.strip() + "\n"))
                continue
            for function in FUNCTION.finditer(body):
                text = function.group().replace(f"@{function.group(1)}(", "@main(", 1) + "\n"
                candidates.append((f"{name}#{i}@{function.group(1)}", text))
    valid, invalid = [], []
    for name, text in candidates:
        try:
            main_function(parse_text(text, name))
            valid.append((name, text))
        except ByocError:
            invalid.append((name, text))
        except Exception:  # noqa: BLE001, S112 - a seed the fuzzer itself will report
            invalid.append((name, text))
    return valid * max(1, 4 * len(invalid) // max(len(valid), 1)) + invalid


def onnx_seeds() -> list[tuple[str, bytes]]:
    """Small models covering the importer's families, and the example CNN."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(name: str, nodes, inputs, outputs, inits=(), opset: int = 17) -> tuple[str, bytes]:  # noqa: ANN001
        graph = helper.make_graph(
            nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            [numpy_helper.from_array(np.asarray(a, dtype=np.float32) if a.dtype.kind == "f" else a, n) for n, a in inits],
        )
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        proto.ir_version = 8
        onnx.checker.check_model(proto)
        return f"{name}.onnx", proto.SerializeToString()

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    seeds = [
        model(
            "conv_pool",
            [
                helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
                helper.make_node("Relu", ["c"], ["r"]),
                helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1], count_include_pad=0),
            ],
            [("x", [1, 3, 8, 8])],
            [("y", [1, 4, 4, 4])],
            [("w", w), ("b", rng.standard_normal(4).astype(np.float32))],
        ),
        model(
            "mlp",
            [
                helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
                helper.make_node("Sigmoid", ["h"], ["s"]),
                helper.make_node("MatMul", ["s", "w2"], ["m"]),
                helper.make_node("Add", ["m", "b2"], ["a"]),
                helper.make_node("Softmax", ["a"], ["y"], axis=-1),
            ],
            [("x", [2, 8])],
            [("y", [2, 5])],
            [("w1", rng.standard_normal((6, 8))), ("b1", rng.standard_normal(6)),
             ("w2", rng.standard_normal((6, 5))), ("b2", rng.standard_normal(5))],
        ),
        model(
            "shapes",
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                helper.make_node("Reshape", ["t", "shape"], ["r"]),
                helper.make_node("Concat", ["r", "r"], ["c"], axis=1),
                helper.make_node("ReduceMean", ["c"], ["m"], axes=[1], keepdims=1),
                helper.make_node("Clip", ["m", "lo", "hi"], ["y"]),
            ],
            [("x", [2, 3, 4])],
            [("y", [2, 1])],
            [("shape", np.array([2, 12], dtype=np.int64)), ("lo", np.array(-0.5, dtype=np.float32)),
             ("hi", np.array(0.5, dtype=np.float32))],
        ),
        model(
            "elementwise",
            [
                helper.make_node("Mul", ["x", "z"], ["m"]),
                helper.make_node("Sub", ["m", "x"], ["s"]),
                helper.make_node("Tanh", ["s"], ["t"]),
                helper.make_node("LeakyRelu", ["t"], ["l"], alpha=0.1),
                helper.make_node("Div", ["l", "z"], ["y"]),
            ],
            [("x", [3, 4]), ("z", [4])],
            [("y", [3, 4])],
        ),
        model(
            "norm",
            [
                helper.make_node("BatchNormalization", ["x", "g", "b", "mu", "var"], ["n"], epsilon=1e-5),
                helper.make_node("GlobalAveragePool", ["n"], ["p"]),
                helper.make_node("Flatten", ["p"], ["y"], axis=1),
            ],
            [("x", [1, 2, 4, 4])],
            [("y", [1, 2])],
            [("g", rng.standard_normal(2)), ("b", rng.standard_normal(2)), ("mu", rng.standard_normal(2)),
             ("var", np.abs(rng.standard_normal(2)) + 0.5)],
        ),
    ]
    seeds.append(("cnn.onnx", (REPO / "examples" / "cnn.onnx").read_bytes()))
    return seeds


TINY = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def saved_seeds(directory: Path) -> list[tuple[str, bytes]]:
    """Saved models, compiled once into `directory`: host only, one C
    backend, and two backends with weights."""
    import byoc

    directory.mkdir(parents=True, exist_ok=True)
    models = {
        "tiny.byoc": (TINY, []),
        "guide.byoc": (REPO / "examples" / "byoc_guide.mlir", ["ccompiler"]),
        "cnn.byoc": (REPO / "examples" / "cnn.onnx", ["cblas", "ccompiler"]),
    }
    seeds = []
    for name, (source, targets) in models.items():
        path = directory / name
        if not path.exists():
            byoc.compile(source, targets=targets, cache=False, quiet=True).save(path)
        seeds.append((name, path.read_bytes()))
    return seeds
