"""Reading relay-dialect text into verified IR, with errors that name file:line:col.

xDSL's parser does not keep source positions on operations, so `SourceParser`
records where each op starts; `verify_module` then reports a failing verifier
at that place instead of printing the whole module.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span

from byoc.dialects import make_context
from byoc.frontend.diagnostics import ByocError, format_parse_error


class SourceMap:
    """Where each parsed op starts in its source text."""

    def __init__(self, line_offset: int = 0) -> None:
        self._spans: dict[int, tuple[Operation, Span]] = {}
        self.line_offset = line_offset
        """Lines before this text in its file (for `--split-input-file` chunks)."""

    def record(self, op: Operation, span: Span) -> None:
        self._spans[id(op)] = (op, span)

    def location(self, op: Operation | None) -> str | None:
        """`file:line:col` of `op`, or of its nearest parsed ancestor."""
        while op is not None:
            entry = self._spans.get(id(op))
            if entry is not None and entry[0] is op:
                span = dataclasses.replace(entry[1], line_offset=self.line_offset)
                return str(span.get_location())
            op = op.parent_op()
        return None


class SourceParser(Parser):
    """A Parser that records the source position of every operation."""

    def __init__(self, ctx: Context, text: str, name: str, source_map: SourceMap):
        super().__init__(ctx, text, name)
        self.source_map = source_map

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as err:
            # Declarative formats check operand/result constraints while parsing.
            raise ParseError(span, str(err)) from None
        self.source_map.record(op, span)
        return op


def verify_module(
    module: ModuleOp, source_map: SourceMap | None = None, name: str = "<input>"
) -> None:
    """Verify every op; the first failure becomes a ByocError naming its place."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as err:
            cause = err.__cause__ if err.__cause__ is not None else err
            message = str(cause).strip()
            if not message.startswith("'"):
                message = f"'{op.name}': {message}"
            where = (source_map.location(op) if source_map else None) or name
            raise ByocError(f"{where}: error: {message}") from None


def parse_text(
    text: str, name: str = "<input>", ctx: Context | None = None
) -> tuple[ModuleOp, SourceMap]:
    """Parse and verify relay-dialect text, raising ByocError on bad input."""
    source_map = SourceMap()
    parser = SourceParser(ctx or make_context(), text, name, source_map)
    try:
        module = parser.parse_module()
    except ParseError as err:
        raise ByocError(format_parse_error(err)) from None
    verify_module(module, source_map, name)
    return module, source_map


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    """Parse and verify a `.mlir` file, raising ByocError on bad input."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ByocError(f"{path}: error: cannot read the file: {err}") from None
    return parse_text(text, str(path), ctx)[0]
