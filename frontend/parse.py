"""Reading relay-dialect text into verified IR, with errors that name file:line:col.

xDSL's parser does not keep source positions on operations, so `SourceParser`
records where each op starts and, once the module is parsed, gives every op a
`FileLineColLoc` (in one sweep over the text, so it stays linear). Locations
survive cloning and the graph passes, so any later diagnostic (a verifier, a
strict partition, a report) can name the place.

It also closes what xDSL's parser leaves open on hostile text: its string
regex backtracks exponentially on an unterminated string (a hang), its
recursive descent overflows Python's stack on deep nesting, and literals out
of range for their type end in Python's own errors. Each is a located
`ParseError` here.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    RankedStructure,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from byoc.dialects import make_context, relay
from byoc.frontend.diagnostics import ByocError, format_parse_error

MAX_NESTING = 64
"""Deepest nesting of brackets (regions, attributes, types) a text may have.

Real models nest about 20 deep (module, function, loop nests, types); xDSL's
recursive descent needs several Python frames a level and overflows past 90."""

FLOAT_MAX = {
    Float16Type(): 65504.0,
    BFloat16Type(): 3.3895313892515355e38,
    Float32Type(): 3.4028234663852886e38,
    Float64Type(): 1.7976931348623157e308,
}
"""Largest finite value of each float type a decimal literal may round to."""

# Python errors xDSL lets escape on malformed values (an integer too long to
# convert, a float too large to pack, an element type with no storage...).
_VALUE_ERRORS = (
    ValueError,
    OverflowError,
    NotImplementedError,
    AssertionError,
    TypeError,
    IndexError,
    KeyError,
    ZeroDivisionError,
    UnicodeError,
)


class _Lexer(MLIRLexer):
    """MLIR's lexer with a string regex that cannot backtrack.

    xDSL's string regex repeats a repeated character class (`(?:[^"]+|...)*`):
    without a closing quote on the line it tries every split of the rest of
    the line, exponential in its length. Possessive quantifiers match the same
    strings in linear time.
    """

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )


_BRACKETS = re.compile(r'"(?:[^"\\\n]++|\\.)*+"?|//[^\n]*+|->|[\[\](){}<>]')
_OPENING = frozenset("[({<")


def nesting_error(text: str, limit: int = MAX_NESTING) -> int | None:
    """The offset of the first bracket nested deeper than `limit`, or None.

    One regex pass: strings and comments are skipped whole, `->` is an arrow.
    """
    depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if token in _OPENING:
            depth += 1
            if depth > limit:
                return match.start()
        elif len(token) == 1:
            depth = max(0, depth - 1)
    return None


def _buffer_ceiling() -> int:
    """The ceiling on one buffer; a malformed `$BYOC_MAX_BUFFER_BYTES` is
    reported by the verifier, the parser then only keeps to the address space."""
    from byoc.dialects.verify import ADDRESS_SPACE_BYTES, max_buffer_bytes

    try:
        return max_buffer_bytes()
    except VerifyException:
        return ADDRESS_SPACE_BYTES


def _describe(err: Exception) -> str:
    """Python's error about a malformed value, in words for a user."""
    message = str(err).strip()
    if "integer string conversion" in message:
        return "an integer literal with more than 4300 digits"
    if isinstance(err, NotImplementedError | AssertionError) or not message:
        return f"a value or type xDSL cannot represent ({type(err).__name__})"
    return message


class SourceParser(Parser):
    """A Parser that gives every operation its source location."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_Lexer(Input(text, name)))
        self._text = text
        self._name = name
        self._line_offset = line_offset
        self._starts: list[tuple[int, Operation]] = []
        self._op_type: type[Operation] | None = None

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        self._op_type = None
        try:
            op = super().parse_operation()
        except VerifyException as err:
            # Declarative formats check operand/result constraints while parsing.
            raise ParseError(span, str(err)) from None
        except _VALUE_ERRORS as err:
            # A value inside this op that xDSL cannot represent.
            raise ParseError(
                Span(span.start, max(self.pos, span.end), self.lexer.input),
                f"cannot parse this op: {_describe(err)}",
            ) from None
        finally:
            # Attributes after an op's regions are no longer its inner ops'.
            self._op_type = None
        self._starts.append((span.start, op))
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        # Which op's operands and attributes are being read: a splat in a
        # relay.constant may stay one element (ConstantOp broadcasts it).
        self._op_type = super()._get_op_by_name(name)
        return self._op_type

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        """xDSL's `dense<...>`, except that a splat is never repeated element by
        element: xDSL multiplies a Python list of one value by the element
        count (`dense<0> : tensor<2147483648xi32>` hung, a larger one was a
        MemoryError). A splat's bytes must fit the ceiling on one buffer; in a
        `relay.constant` it stays one element, elsewhere its bytes are repeated
        in C."""
        start = self._current_token.span.start
        self.parse_punctuation("<", " in dense attribute")
        contents: tuple[list[Any], list[int]] | str | None = None
        if self.parse_optional_punctuation(">") is None:
            hex_string = self.parse_optional_str_literal()
            contents = hex_string if hex_string is not None else self._parse_tensor_literal()
            self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        element = type.element_type
        count = math.prod(type.get_shape())
        one: bytes | None = None
        if isinstance(contents, str):
            try:
                data = bytes.fromhex(contents[2:])
            except ValueError:
                self.raise_error("Hex string in denseAttr is invalid", start, self.pos)
            if len(data) == element.compile_time_size and count != 1:
                one = data
            elif len(data) != count * element.compile_time_size:
                self.raise_error(
                    f"Shape mismatch in dense literal. Expected {count} elements "
                    f"from the type, but got {len(data) // element.compile_time_size} "
                    "elements.",
                    start,
                    self.pos,
                )
            else:
                return DenseIntOrFPElementsAttr(type, BytesAttr(data))
        elif contents is None:
            if count != 0:
                self.raise_error(
                    "Expected at least one element in the dense literal, but got None",
                    start,
                    self.pos,
                )
            return DenseIntOrFPElementsAttr.from_list(type, [])
        else:
            values, shape = contents
            data_values = [value.to_type(self, element) for value in values]
            if shape:
                if list(type.get_shape()) != shape:
                    self.raise_error(
                        f"Shape mismatch in dense literal. Expected "
                        f"{list(type.get_shape())} shape from the type, but got "
                        f"{shape} shape.",
                        start,
                        self.pos,
                    )
                return DenseIntOrFPElementsAttr.from_list(type, data_values)
            single = DenseIntOrFPElementsAttr.from_list(TensorType(element, [1]), data_values)
            if count == 1:
                return DenseIntOrFPElementsAttr(type, single.data)
            one = single.data.data
        size = count * len(one)
        limit = _buffer_ceiling()
        if size > limit:
            from byoc.dialects.verify import MAX_BUFFER_ENV

            end = len(self._text[: self.pos].rstrip())  # not the next line
            self.raise_error(
                f"a splat of {count} elements is {size} bytes, more than the "
                f"ceiling on one buffer ({limit} bytes; ${MAX_BUFFER_ENV} sets it)",
                start,
                max(end, start + 1),
            )
        if self._op_type is relay.ConstantOp:
            return DenseIntOrFPElementsAttr(type, BytesAttr(one))
        return DenseIntOrFPElementsAttr(type, BytesAttr(one * count))

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        start = self._current_token.span.start
        hexadecimal = self._current_token.text[:2] in ("0x", "0X")
        try:
            attr = super().parse_optional_builtin_int_or_float_attr()
        except (OverflowError, ValueError) as err:
            self.raise_error(f"number out of range for its type ({_describe(err)})", start, self.pos)
        if isinstance(attr, FloatAttr) and attr.type not in FLOAT_MAX:
            # xDSL parses f80/f128 attributes but cannot print or pack them.
            self.raise_error(
                f"float attributes of type {attr.type} are not supported "
                "(f16, bf16, f32 or f64)",
                start,
                self.pos,
            )
        if isinstance(attr, FloatAttr) and not hexadecimal:
            # A decimal literal must round to a finite value of its type
            # (MLIR: "float literal out of range"); hex spells inf and NaN.
            limit = FLOAT_MAX.get(attr.type)
            value = attr.value.data
            if limit is not None and not (math.isfinite(value) and abs(value) <= limit):
                self.raise_error(
                    f"float literal out of range for {attr.type} (largest finite "
                    f"value {limit:g})",
                    start,
                    self.pos,
                )
        return attr

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        deep = nesting_error(self._text, MAX_NESTING)
        if deep is not None:
            raise ParseError(
                Span(deep, deep + 1, self.lexer.input),
                f"nesting deeper than {MAX_NESTING} levels",
            )
        try:
            module = super().parse_module(allow_implicit_module)
        except RecursionError:
            span = self._current_token.span
            raise ParseError(span, "nesting too deep for the parser") from None
        except _VALUE_ERRORS as err:
            # Outside any op (an alias): the token the parser stopped on.
            raise ParseError(
                self._current_token.span, f"cannot parse this: {_describe(err)}"
            ) from None
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
    except _VALUE_ERRORS as err:
        # A verifier of xDSL's tripping on malformed IR: a use of a value
        # before its definition ("forward declared values") in a loop block.
        message = _describe(err)
        if "Forward declared" in message:
            message = "a value is used before its definition"
        raise _verify_error(VerifyException(message), op, name) from None


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
    parser: SourceParser | None = None
    try:
        # The parser lexes its first token as it is made: a bad one is a ParseError.
        parser = SourceParser(ctx or make_context(), text, name)
        module = parser.parse_module()
    except ParseError as err:
        raise ByocError(format_parse_error(err)) from None
    except (MemoryError, *_VALUE_ERRORS) as err:
        # xDSL materialises a splat `dense<...>` of any size before a verifier
        # sees it (MemoryError), and raises Python errors of its own on some
        # malformed IR (a loop-level value used above its definition).
        where = name
        if parser is not None:
            where = parser._current_token.span.get_location()  # noqa: SLF001
        if isinstance(err, MemoryError):
            message = "out of memory parsing this value (a tensor too large?)"
        else:
            message = _describe(err)
        raise ByocError(f"{where}: error: {message}") from None
    verify_module(module, name)
    return module


def names_file(text: str) -> bool:
    """Whether `text` is the name of an existing file (never raises: relay text
    is no file name, and may be too long or hold a NUL)."""
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    """Parse and verify a `.mlir` file, raising ByocError on bad input."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ByocError(f"{path}: error: cannot read the file: {err}") from None
    return parse_text(text, str(path), ctx)
