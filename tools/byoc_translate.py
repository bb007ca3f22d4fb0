"""byoc-translate: show the code byoc generates for a model's external functions.

    byoc-translate model.mlir --emit-c
    byoc-translate model.mlir --emit-c --annotate=ccompiler
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from byoc.backends import DEFAULT_BACKEND, parse_targets
from byoc.backends.errors import run_backend_code
from byoc.runtime.build import describe_functions, functions_of, load_source, partition_for
from byoc.tools.common import (
    add_debug_argument,
    add_input_shape_argument,
    apply_debug,
    input_shapes,
    run_cli,
    write_text,
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="byoc-translate", description="Print the code generated for a model."
    )
    p.add_argument("file", help="relay-dialect .mlir file or ONNX .onnx model")
    p.add_argument(
        "--emit-c",
        action="store_true",
        help="print the C of every external function",
    )
    p.add_argument(
        "--emit-library",
        action="store_true",
        help="write a shared library (-o, default libmodel.so) and its C header",
    )
    p.add_argument(
        "--name",
        default="model",
        help="C name of the exported model: <name>_run in <name>.h (default model)",
    )
    p.add_argument(
        "--weights",
        choices=("embed", "file"),
        default="embed",
        help="with --emit-library: embed the weights in the library (default), or "
        "write them beside it as <name>.weights, loaded by <name>_load_weights",
    )
    p.add_argument(
        "--annotate",
        default=DEFAULT_BACKEND,
        metavar="BACKENDS",
        help=f"backends in priority order, comma-separated (default {DEFAULT_BACKEND})",
    )
    p.add_argument(
        "--quiet", action="store_true", help="no progress line while a slow compile runs"
    )
    add_input_shape_argument(p)
    p.add_argument(
        "--no-simplify",
        action="store_true",
        help="partition the graph as given, without byoc-simplify",
    )
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    add_debug_argument(p)
    return p


def translate(args: argparse.Namespace) -> str:
    backends = parse_targets(args.annotate)
    module = load_source(args.file, input_shapes(args.input_shape))
    partition_for(module, backends, simplify=not args.no_simplify)
    parts: list[str] = []
    for backend in backends:
        functions = functions_of(module, backend.name)
        if functions.ops.first is None:
            continue
        where = describe_functions(functions)
        text = run_backend_code(backend, "source", where, backend.show, functions)
        if text is None:
            parts.append(f"// backend '{backend.name}' does not generate C\n")
        else:
            parts.append(f"// backend: {backend.name}\n{text}")
    if not parts:
        return "// no external functions: every op runs on the host\n"
    return "\n".join(parts)


def emit_library(args: argparse.Namespace) -> None:
    from byoc.runtime.aot import export_library
    from byoc.runtime.build import compile

    model = compile(
        args.file,
        targets=args.annotate,
        quiet=args.quiet,
        input_shapes=input_shapes(args.input_shape),
        simplify=not args.no_simplify,
    )
    library, header = export_library(
        model, args.output or f"lib{args.name}.so", args.name, args.weights
    )
    print(f"wrote {library} and {header}")


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> None:
        args = parser().parse_args(argv)
        apply_debug(args)
        if args.emit_library:
            emit_library(args)
            return
        if not args.emit_c:
            parser().error("nothing to do: give --emit-c or --emit-library")
        write_text(translate(args), args.output)

    return run_cli(body)


if __name__ == "__main__":
    sys.exit(main())
