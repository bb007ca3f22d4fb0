"""byoc-opt: run byoc's passes on relay-dialect IR and print the result.

    byoc-opt model.mlir --annotate=ccompiler --partition
    byoc-opt model.mlir -p 'byoc-annotate{targets=ccompiler},byoc-partition'
    byoc-opt kernels.mlir -p convert-relay-to-loops,convert-loops-to-emitc -t c
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.universe import Universe
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from byoc.dialects import BYOC_DIALECTS, UPSTREAM_DIALECTS
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import SourceParser, verify_module
from byoc.passes import BYOC_PASSES
from byoc.targets import BYOC_TARGETS
from byoc.tools.common import (
    add_debug_argument,
    add_partition_arguments,
    apply_debug,
    graph_passes,
    run_cli,
)

DESCRIPTION = "Run byoc's passes on relay-dialect IR and print the result."


def _entries(factories: Mapping[str, Callable[[], type]]) -> list[str]:
    """`name{option,...}` and the first line of the docstring, for each pass or target."""
    lines = []
    for name, factory in factories.items():
        cls = factory()
        options = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        head = f"{name}{{{','.join(options)}}}" if options else name
        doc = (cls.__doc__ or "").strip().splitlines()
        summary = doc[0].strip() if doc else ""
        lines.append(f"  {head}\n      {summary}" if summary else f"  {head}")
    return lines


def byoc_help() -> str:
    """The description `byoc-opt --help` leads with: byoc's own passes and targets."""
    return "\n".join(
        [
            DESCRIPTION,
            "",
            "  byoc-opt model.mlir --annotate=cblas,ccompiler --partition",
            "  byoc-opt model.mlir --annotate --partition -t report",
            "  byoc-opt model.mlir -p 'byoc-annotate{targets=ccompiler},byoc-partition'",
            "  byoc-opt kernels.mlir -p convert-relay-to-loops,convert-loops-to-emitc -t c",
            "",
            "byoc passes (-p 'name{option=value},...'):",
            *_entries(BYOC_PASSES),
            "",
            "byoc targets (-t name; default mlir):",
            *_entries(BYOC_TARGETS),
        ]
    )


def upstream_help(passes: Sequence[str], targets: Sequence[str]) -> str:
    """The epilog: xDSL's own passes and targets, which byoc-opt accepts too."""
    wrap = lambda names: textwrap.fill(  # noqa: E731
        ", ".join(names),
        width=78,
        initial_indent="  ",
        subsequent_indent="  ",
        break_on_hyphens=False,
    )
    return "\n".join(
        [
            "upstream xDSL passes (also accepted by -p):",
            wrap(passes),
            "",
            "upstream xDSL targets (also accepted by -t):",
            wrap(targets),
        ]
    )


class ByocOptMain(xDSLOptMain):
    """xdsl-opt with byoc's dialects, passes, targets and short flags."""

    _chunk_offset = 0

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description=byoc_help(), args=args)

    def register_all_dialects(self) -> None:
        upstream = Universe.get_multiverse().all_dialects
        for name in UPSTREAM_DIALECTS:
            self.ctx.register_dialect(name, upstream[name])
        for name, factory in BYOC_DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            name = self.get_input_name()
            text = io.read().decode("utf-8", errors="replace")
            module = SourceParser(self.ctx, text, name, self._chunk_offset).parse_module(
                not self.args.no_implicit_module
            )
            if not self.args.disable_verify:
                verify_module(module, name)
            return module

        def parse_onnx(io: IO[bytes]) -> ModuleOp:
            # The importer reads the file itself (large weights without copies).
            from byoc.frontend.onnx import from_onnx

            if not self.args.input_file:
                raise ByocError(
                    "error: byoc-opt reads ONNX models from a file, not stdin; give its "
                    "path (byoc-import --input-shape pins dynamic dims first)"
                )
            return from_onnx(self.args.input_file)

        self.available_frontends["mlir"] = parse_mlir
        self.available_frontends["onnx"] = parse_onnx

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self._chunk_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in BYOC_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(BYOC_TARGETS)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        # byoc's passes, targets and flags first; xDSL's long lists last.
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        add_partition_arguments(arg_parser)
        add_debug_argument(arg_parser._action_groups[-1])
        super().register_all_arguments(arg_parser)
        positionals, driver, byoc = arg_parser._action_groups[:3]
        arg_parser._action_groups[:3] = [positionals, byoc, driver]
        driver.title = "driver options (as xdsl-opt's)"
        upstream_passes = [p for p in self.available_passes if p not in BYOC_PASSES]
        upstream_targets = [t for t in self.available_targets if t not in BYOC_TARGETS]
        for action in arg_parser._actions:  # xDSL lists every pass in -p's help
            if "--passes" in action.option_strings:
                action.help = "comma-separated pass pipeline, e.g. 'byoc-annotate{targets=ccompiler},byoc-partition'"
            elif "--target" in action.option_strings:
                action.help = "output format: mlir (default), " + ", ".join(BYOC_TARGETS) + ", or an upstream target"
        arg_parser.epilog = upstream_help(upstream_passes, upstream_targets)

    def setup_pipeline(self) -> None:
        apply_debug(self.args)
        flags = graph_passes(self.args)
        if self.args.target == "report" and self.args.annotate:
            # The report explains host ops with the backends' own reasons.
            self.args.target = (
                f"report{{targets={self.args.annotate} "
                f"min-region-size={self.args.min_region_size}}}"
            )
        if flags:
            spec = ",".join(flags)
            self.args.passes = f"{spec},{self.args.passes}" if self.args.passes else spec
        try:
            super().setup_pipeline()
        except (ValueError, ArgSpecParseError) as err:
            # A user's -p text: unknown pass, unknown or ill-typed option,
            # syntax (ArgSpecParseError is a BaseException in xDSL 0.74).
            text = str(err).strip().removeprefix("Error parsing pass pipeline specification:")
            raise ByocError(f"error: bad pass pipeline: {text.strip()}") from None


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda: ByocOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
