"""byoc-import: turn an ONNX model into relay-dialect text.

    byoc-import model.onnx -o model.mlir
    byoc-import model.onnx --input-shape x=1,3,224,224 | byoc-opt --annotate=ccompiler
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from byoc.frontend.diagnostics import ByocError
from byoc.tools.common import run_cli, write_text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="byoc-import", description="Import an ONNX model as relay-dialect IR."
    )
    p.add_argument("file", help="ONNX model (.onnx)")
    p.add_argument("-o", "--output", help="write the IR to this file instead of stdout")
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="give graph input NAME this static shape (repeatable); for models "
        "exported with dynamic dimensions",
    )
    return p


def input_shapes(specs: Sequence[str]) -> dict[str, list[int]]:
    """`["x=1,3,224,224"]` -> `{"x": [1, 3, 224, 224]}`."""
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, _, dims = spec.rpartition("=")
        try:
            shape = [int(d) for d in dims.split(",")] if dims.strip() else []
        except ValueError:
            shape = None
        if not name or shape is None or any(d <= 0 for d in shape):
            raise ByocError(
                f"error: --input-shape {spec}: expected NAME=D0,D1,... with positive "
                "sizes, e.g. x=1,3,224,224"
            )
        shapes[name] = shape
    return shapes


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> None:
        from byoc.frontend.onnx import from_onnx

        args = parser().parse_args(argv)
        module = from_onnx(args.file, input_shapes=input_shapes(args.input_shape))
        text = str(module) + "\n"
        write_text(text, args.output)

    return run_cli(body)


if __name__ == "__main__":
    sys.exit(main())
