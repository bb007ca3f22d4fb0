"""byoc-opt: run byoc's passes on relay-dialect IR and print the result.

    byoc-opt model.mlir --annotate=ccompiler --partition
    byoc-opt model.mlir -p 'byoc-annotate{targets=ccompiler},byoc-partition'
    byoc-opt kernels.mlir -p convert-relay-to-loops,convert-loops-to-emitc -t c
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
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
from byoc.tools.common import add_partition_arguments, graph_passes, run_cli


class ByocOptMain(xDSLOptMain):
    """xdsl-opt with byoc's dialects, passes, targets and short flags."""

    _chunk_offset = 0

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

        self.available_frontends["mlir"] = parse_mlir

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
        super().register_all_arguments(arg_parser)
        add_partition_arguments(arg_parser)

    def setup_pipeline(self) -> None:
        if self.args.target == "report" and self.args.annotate:
            # The report explains host ops with the backends' own reasons.
            self.args.target = f"report{{targets={self.args.annotate}}}"
        flags = graph_passes(self.args)
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
