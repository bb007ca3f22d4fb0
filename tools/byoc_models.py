"""byoc-models: the real models shipped in the onnx wheel, listed and located.

    byoc-models                      # the light models, with their paths
    byoc-models --all                # and every model of the other suites
    byoc-models squeezenet           # the path of one, for other tools:
    byoc-run "$(byoc-models squeezenet)" --annotate=cblas,ccompiler --check
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from byoc.tools.common import run_cli


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="byoc-models",
        description="List the real models shipped in the onnx wheel, or print the path of one.",
    )
    p.add_argument(
        "name",
        nargs="?",
        help="a light model (e.g. squeezenet) or SUITE/TEST (e.g. simple/test_gradient_of_add)",
    )
    p.add_argument("--all", action="store_true", help="also list every model of the other suites")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> None:
        from byoc.frontend.onnx import shipped

        args = parser().parse_args(argv)
        if args.name is not None:
            sys.stdout.write(f"{shipped.locate(args.name)}\n")
            return
        lines = [f"{name:<14} {shipped.light_model_path(name)}" for name in shipped.LIGHT_MODELS]
        if args.all:
            for suite in shipped.SUITES[1:]:
                lines += [f"{suite}/{path.name}" for path in shipped.model_dirs(suite)]
        sys.stdout.write("\n".join(lines) + "\n")

    return run_cli(body)
