"""Reading relay-dialect text into verified IR, with errors that name file:line:col.

xDSL's parser does not keep source positions on operations, so `SourceParser`
records where each op starts and, once the module is parsed, gives every op a
`FileLineColLoc` (in one sweep over the text, so it stays linear). Locations
survive cloning and the graph passes, so any later diagnostic (a verifier, a
strict partition, a report) can name the place.
"""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from byoc.dialects import make_context
from byoc.frontend.diagnostics import ByocError, format_parse_error


class SourceParser(Parser):
    """A Parser that gives every operation its source location."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._line_offset = line_offset
        self._starts: list[tuple[int, Operation]] = []

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as err:
            # Declarative formats check operand/result constraints while parsing.
            raise ParseError(span, str(err)) from None
        self._starts.append((span.start, op))
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        module = super().parse_module(allow_implicit_module)
        self._attach_locations()
        return module

    def _attach_locations(self) -> None:
        """Set `op.location` from the recorded offsets, counting lines once."""
        filename = StringAttr(self._name)
        text = self._text
        line, line_start, pos = 1, 0, 0
        for start, op in sorted(self._starts, key=lambda entry: entry[0]):
            newlines = text.count("\n", pos, start)
            if newlines:
                line += newlines
                line_start = text.rindex("\n", pos, start) + 1
            pos = start
            op.location = FileLineColLoc(
                filename,
                IntAttr(line + self._line_offset),
                IntAttr(start - line_start + 1),
            )
        self._starts.clear()


def location_of(op: Operation | None) -> str | None:
    """`file:line:col` of `op`, or of its nearest located ancestor."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


def describe(op: Operation) -> str:
    """Where `op` is and what it is, for a message: `file:line:col: 'relay.tanh'`."""
    where = location_of(op)
    return f"{where}: '{op.name}'" if where else f"'{op.name}'"


def verify_module(module: ModuleOp, name: str = "<input>") -> None:
    """Verify every op, then the module as a whole (dialects/verify.py: sizes,
    dominance, calls, `@main`); the first failure becomes a ByocError naming
    its place."""
    from byoc.dialects.verify import SizeChecker, max_buffer_bytes, verify_structure

    op: Operation | None = None
    try:
        limit = max_buffer_bytes()
        sizes = SizeChecker(limit)
        for op in module.walk():
            # Sizes first: op verifiers may do arithmetic on any shape.
            sizes.check_op(op)
            op.verify(verify_nested_ops=False)
        op = None
        verify_structure(module, limit, sizes=False)
    except (VerifyException, DiagnosticException) as err:
        raise _verify_error(err, op, name) from None


def _verify_error(err: Exception, op: Operation | None, name: str) -> ByocError:
    from byoc.dialects.verify import OpVerifyException

    if isinstance(err, ByocError):
        return err
    if isinstance(err, OpVerifyException):
        op = err.op
    cause = err.__cause__ if err.__cause__ is not None else err
    message = str(cause).strip()
    if op is not None and not message.startswith("'"):
        message = f"'{op.name}': {message}"
    where = (location_of(op) if op is not None else None) or name
    return ByocError(f"{where}: error: {message}")


def parse_text(text: str, name: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parse and verify relay-dialect text, raising ByocError on bad input."""
    parser = SourceParser(ctx or make_context(), text, name)
    try:
        module = parser.parse_module()
    except ParseError as err:
        raise ByocError(format_parse_error(err)) from None
    verify_module(module, name)
    return module


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    """Parse and verify a `.mlir` file, raising ByocError on bad input."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ByocError(f"{path}: error: cannot read the file: {err}") from None
    return parse_text(text, str(path), ctx)
