"""What the byoc command-line tools share: the partitioning flags and error handling."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from xdsl.utils.exceptions import DiagnosticException, ParseError

from byoc.backends import DEFAULT_BACKEND
from byoc.backends.errors import debug_enabled, install_warning_format
from byoc.frontend.diagnostics import format_parse_error


def add_debug_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--debug`: a backend's failure (or byoc's own) shows its traceback."""
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the Python traceback of a failure inside a backend (as BYOC_DEBUG=1)",
    )


def apply_debug(args: argparse.Namespace) -> None:
    """Honour `--debug` for everything that runs after parsing."""
    if getattr(args, "debug", False):
        os.environ["BYOC_DEBUG"] = "1"


def add_partition_arguments(parser: argparse.ArgumentParser) -> None:
    """`--annotate[=a,b]`, `--merge`, `--partition`."""
    group = parser.add_argument_group("partitioning (byoc)")
    group.add_argument(
        "--simplify",
        action="store_true",
        help="simplify the graph first (byoc-simplify, as byoc.compile does)",
    )
    group.add_argument(
        "--annotate",
        nargs="?",
        const=DEFAULT_BACKEND,
        default=None,
        metavar="BACKENDS",
        help="mark ops for these backends, in priority order "
        f"(comma-separated; default {DEFAULT_BACKEND})",
    )
    group.add_argument(
        "--merge",
        action="store_true",
        help="merge marked neighbouring ops into extern.regions (annotates for "
        f"{DEFAULT_BACKEND} first when --annotate is not given)",
    )
    group.add_argument(
        "--partition",
        action="store_true",
        help="merge, then outline each region into a function (annotates for "
        f"{DEFAULT_BACKEND} first when --annotate is not given)",
    )
    group.add_argument(
        "--no-fallback",
        action="store_true",
        help="fail, listing every op, if some op is taken by no backend",
    )
    group.add_argument(
        "--min-region-size",
        type=int,
        default=1,
        metavar="N",
        help="regions with fewer than N ops go back to the host (default 1)",
    )


def add_input_shape_argument(parser: argparse.ArgumentParser) -> None:
    """`--input-shape NAME=D0,D1,...` (repeatable), for ONNX models."""
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="give graph input NAME this static shape (repeatable); for ONNX "
        "models exported with symbolic dimensions",
    )


def input_shapes(specs: Sequence[str]) -> dict[str, list[int]] | None:
    """`["x=1,3,224,224"]` -> `{"x": [1, 3, 224, 224]}` (None for no specs)."""
    from byoc.frontend.diagnostics import ByocError

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
    return shapes or None


def graph_passes(args: argparse.Namespace) -> list[str]:
    """The pass pipeline the partitioning flags ask for.

    `--merge`/`--partition` without `--annotate` annotate for the default
    backend first (ops annotated by hand keep their `extern.target`)."""
    passes: list[str] = []
    if args.annotate is None and (args.partition or args.merge):
        args.annotate = DEFAULT_BACKEND
    if args.annotate is not None:
        # As byoc.compile: QDQ units become quantized ops before annotation
        # (and before simplification, which would fold their weights' DQ).
        passes.append("byoc-fake-quantization-to-integer")
    if args.simplify:
        passes.append("byoc-simplify")
    if args.annotate is not None:
        strict = " no-fallback=true" if args.no_fallback else ""
        passes.append(f"byoc-annotate{{targets={args.annotate}{strict}}}")
    size = f"{{min-region-size={args.min_region_size}}}"
    if args.partition:
        passes.append(f"byoc-partition{size}")
    elif args.merge:
        passes.append(f"byoc-merge-regions{size}")
    return passes


def write_text(text: str, path: str | None) -> None:
    """Write a CLI's text result to `path` (`-o`), or to stdout without one."""
    if path:
        with open(path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def run_cli(body: Callable[[], object]) -> int:
    """Run a CLI body; bad input becomes one message on stderr and exit status 1."""
    install_warning_format()
    try:
        body()
    except ParseError as err:
        print(format_parse_error(err), file=sys.stderr)
        return 1
    except DiagnosticException as err:
        print(str(err).strip(), file=sys.stderr)
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as err:  # argparse: --help is 0, a bad option is 1
        return 0 if err.code in (0, None) else 1
    except Exception as err:  # never a traceback for the user, unless asked
        print(f"error: internal compiler error: {type(err).__name__}: {err}", file=sys.stderr)
        if debug_enabled():
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
        return 1
    return 0
