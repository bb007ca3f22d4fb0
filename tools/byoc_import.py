"""byoc-import: turn an ONNX model into relay-dialect text.

    byoc-import model.onnx -o model.mlir
    byoc-import model.onnx --input-shape x=1,3,224,224 | byoc-opt --annotate=ccompiler
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from byoc.tools.common import add_input_shape_argument, input_shapes, run_cli, write_text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="byoc-import", description="Import an ONNX model as relay-dialect IR."
    )
    p.add_argument("file", help="ONNX model (.onnx)")
    p.add_argument("-o", "--output", help="write the IR to this file instead of stdout")
    add_input_shape_argument(p)
    return p


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
