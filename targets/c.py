"""Prints a module of emitc ops as C11 source: `emit_c(module)`, or `byoc-opt -t c`.

The output compiles with `gcc -std=c11 -Wall -Wextra -Werror`: it includes exactly the
standard headers it uses; it omits pure operations whose results are never used, and
`static` functions and globals nothing printed refers to; it casts to `void` the
parameters and variables it never reads.

Names. Every SSA value becomes a local `v<N>` (numbered per function), or is inlined
at its single use when it is a pure expression. Every IR symbol (function, global)
becomes `c_identifier(symbol)`, which cannot inject C and cannot collide with a local,
a keyword or a name of the included headers; two symbols mapping to one identifier
are an error.

Constants. Integers print in decimal (`INTn_MIN` for the most negative values), floats
as the shortest decimal that reads back as the same value (`f` suffix for `float`),
and infinities and NaNs as `INFINITY` and `NAN` from <math.h> (the sign of a NaN is
not kept).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import IO

import numpy as np

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    TypeAttribute,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from byoc.dialects.emitc import (
    CONST_ATTR,
    RESTRICT_ATTR,
    EmitC_AddOp,
    EmitC_ApplyOp,
    EmitC_ArrayType,
    EmitC_AssignOp,
    EmitC_BitwiseAndOp,
    EmitC_BitwiseOrOp,
    EmitC_BitwiseXorOp,
    EmitC_BitwiseLeftShiftOp,
    EmitC_BitwiseRightShiftOp,
    EmitC_CallOp,
    EmitC_CallOpaqueOp,
    EmitC_CastOp,
    EmitC_CmpOp,
    EmitC_ConditionalOp,
    EmitC_ConstantOp,
    EmitC_DeclareFuncOp,
    EmitC_DivOp,
    EmitC_ForOp,
    EmitC_FuncOp,
    EmitC_GetGlobalOp,
    EmitC_GlobalOp,
    EmitC_IfOp,
    EmitC_IncludeOp,
    EmitC_LiteralOp,
    EmitC_LoadOp,
    EmitC_LogicalAndOp,
    EmitC_LogicalNotOp,
    EmitC_LogicalOrOp,
    EmitC_LValueType,
    EmitC_MulOp,
    EmitC_OpaqueAttr,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_PtrDiffT,
    EmitC_RemOp,
    EmitC_ReturnOp,
    EmitC_SizeT,
    EmitC_SubOp,
    EmitC_SubscriptOp,
    EmitC_UnaryMinusOp,
    EmitC_VariableOp,
    EmitC_VerbatimOp,
    EmitC_YieldOp,
    check_single_line,
)


class CEmissionError(DiagnosticException):
    """The module cannot be printed as C."""


# ---------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------

C_KEYWORDS = frozenset(
    """
    auto break case char const continue default do double else enum extern float for
    goto if inline int long register restrict return short signed sizeof static struct
    switch typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool
    _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    alignas alignof bool constexpr false nullptr static_assert thread_local true typeof
    typeof_unqual asm fortran
    """.split()
)
"""C11 keywords, C23 keywords and common extensions."""

_MATH_FUNCTIONS = frozenset(
    f"{base}{suffix}"
    for base in """
    acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1
    frexp ilogb ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow
    sqrt erf erfc lgamma tgamma ceil floor nearbyint rint lrint llrint round lround
    llround trunc fmod remainder remquo copysign nan nextafter nexttoward fdim fmax fmin
    fma
    """.split()
    for suffix in ("", "f", "l")
) | frozenset(
    """
    fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal isless
    islessequal islessgreater isunordered math_errhandling
    """.split()
)
_STDLIB_FUNCTIONS = frozenset(
    """
    malloc calloc realloc free aligned_alloc abort exit atexit at_quick_exit quick_exit
    getenv system atof atoi atol atoll strtod strtof strtold strtol strtoll strtoul
    strtoull rand srand bsearch qsort abs labs llabs div ldiv lldiv mblen mbtowc wctomb
    mbstowcs wcstombs
    """.split()
)
_STRING_FUNCTIONS = frozenset(
    """
    memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp
    strcoll strxfrm strchr strrchr strspn strcspn strpbrk strstr strtok strerror strlen
    """.split()
)
RESERVED_NAMES = (
    _MATH_FUNCTIONS
    | _STDLIB_FUNCTIONS
    | _STRING_FUNCTIONS
    | frozenset("main errno offsetof assert".split())
)
"""Lower-case names the included headers (or the C runtime) define."""

_IDENTIFIER_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
)
_LOCAL_NAME = re.compile(r"v[0-9]+")
_MACRO_LIKE = re.compile(r"[A-Z][A-Z0-9_]*")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SYMBOL_PREFIX = "sym_"


def c_identifier(name: str) -> str:
    """The C identifier of the IR symbol `name`.

    Each character outside [A-Za-z0-9_] becomes `_XX` per UTF-8 byte (upper-case hex).
    The result is then prefixed with `sym_` if it is empty or starts with a digit or
    `_` (reserved at file scope), is a keyword or a name from the standard headers,
    looks like a macro (all upper case), ends in `_t`, or has the shape `v<N>` of a
    local. So `ccompiler_0` stays `ccompiler_0`, `int` becomes `sym_int` and
    `x; y` becomes `x_3B_20y`.
    """
    ident = "".join(
        ch if ch in _IDENTIFIER_CHARS else "".join(f"_{b:02X}" for b in ch.encode())
        for ch in name
    )
    if (
        not ident
        or ident[0].isdigit()
        or ident[0] == "_"
        or ident in C_KEYWORDS
        or ident in RESERVED_NAMES
        or ident.endswith("_t")
        or _MACRO_LIKE.fullmatch(ident)
        or _LOCAL_NAME.fullmatch(ident)
    ):
        ident = SYMBOL_PREFIX + ident
    return ident


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------


def _with_point(text: str) -> str:
    return text if any(c in text for c in ".en") else text + ".0"


def c_float_literal(value: float, float_type: Attribute) -> str:
    """A C literal denoting exactly `value` as a `float` or `double`."""
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "-INFINITY"
    if isinstance(float_type, Float64Type):
        return _with_point(repr(value))
    if not isinstance(float_type, Float32Type):
        raise CEmissionError(f"no C type for floats of type {float_type}")
    return _f32_literal(np.float32(value))


def _f32_literal(x: np.float32) -> str:
    """A C `float` literal of a finite float32: numpy prints the shortest decimal
    that reads back as exactly this float32 (and C rounds a literal correctly)."""
    return _with_point(str(x)) + "f"


def c_float32_literals(values: np.ndarray) -> list[str]:
    """C literals of float32 `values`, each distinct value formatted once."""
    distinct, positions = np.unique(values, return_inverse=True)
    texts = [
        c_float_literal(float(v), Float32Type()) if not np.isfinite(v) else _f32_literal(v)
        for v in distinct
    ]
    # np.unique merges -0.0 into 0.0; signs of zeros are kept apart.
    out = [texts[i] for i in positions.reshape(-1)]
    for i in np.flatnonzero(values == 0):
        out[i] = "-0.0f" if np.signbit(values[i]) else "0.0f"
    return out


def c_array(name: str, data: np.ndarray) -> str:
    """`static const float name[N] = {...};` holding `data` (float32 or float64)
    exactly, for a backend that copies a constant into its C."""
    array = np.asarray(data)
    if array.dtype not in (np.float32, np.float64):
        raise CEmissionError(f"no C array for {array.dtype} constants")
    typ, float_type = ("float", Float32Type()) if array.dtype == np.float32 else ("double", Float64Type())
    values = ", ".join(c_float_literal(float(x), float_type) for x in array.ravel().tolist())
    return f"static const {typ} {c_identifier(name)}[{max(array.size, 1)}] = {{{values}}};"


def c_int_literal(value: int, int_type: Attribute) -> str:
    """A C literal for `value` of an integer type (wrapped to the type's width)."""
    if isinstance(int_type, IntegerType):
        width = int_type.width.data
        if width == 1:
            return "true" if value & 1 else "false"
        value &= (1 << width) - 1
        if int_type.signedness.data == Signedness.UNSIGNED:
            return f"{value}u"
        if value >= 1 << (width - 1):
            value -= 1 << width
        if value == -(1 << (width - 1)):
            return f"INT{width}_MIN"
        return str(value)
    if isinstance(int_type, IndexType | EmitC_SizeT):
        return f"{value}u" if value >= 0 else str(value)
    return str(value)


# ---------------------------------------------------------------------------
# The printer
# ---------------------------------------------------------------------------

_HEADER_OF_NAME: dict[str, str] = {
    **{name: "math.h" for name in _MATH_FUNCTIONS},
    **{name: "stdlib.h" for name in _STDLIB_FUNCTIONS},
    **{name: "string.h" for name in _STRING_FUNCTIONS},
    "INFINITY": "math.h",
    "NAN": "math.h",
    "HUGE_VAL": "math.h",
    "HUGE_VALF": "math.h",
    "NULL": "stddef.h",
    "size_t": "stddef.h",
    "ptrdiff_t": "stddef.h",
    "bool": "stdbool.h",
    "true": "stdbool.h",
    "false": "stdbool.h",
    **{
        f"{kind}{w}_{suffix}": "stdint.h"
        for kind in ("INT", "UINT")
        for w in (8, 16, 32, 64)
        for suffix in ("MIN", "MAX", "C")
    },
    **{f"{s}int{w}_t": "stdint.h" for s in ("", "u") for w in (8, 16, 32, 64)},
}
"""The standard header declaring each name the printer may emit."""

_OPAQUE_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_ ]*")
_OPAQUE_VALUE_FORBIDDEN = re.compile(r"[;{}#\"'\\]|//|/\*")
_ATOM = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_*, ]*\))?|[0-9][A-Za-z0-9_.+]*"
)
"""Expressions that need no parentheses as operands: names, simple calls, numbers."""

_BINARY_OPERATORS: dict[type[Operation], str] = {
    EmitC_AddOp: "+",
    EmitC_SubOp: "-",
    EmitC_MulOp: "*",
    EmitC_DivOp: "/",
    EmitC_RemOp: "%",
    EmitC_BitwiseAndOp: "&",
    EmitC_BitwiseOrOp: "|",
    EmitC_BitwiseXorOp: "^",
    EmitC_BitwiseLeftShiftOp: "<<",
    EmitC_BitwiseRightShiftOp: ">>",
    EmitC_LogicalAndOp: "&&",
    EmitC_LogicalOrOp: "||",
}
_CMP_OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

MAX_INLINE_LENGTH = 80
"""Longer expressions get a local: keeps lines readable and printing linear."""

_WRAPPING_OPS = (
    EmitC_AddOp,
    EmitC_SubOp,
    EmitC_MulOp,
    EmitC_DivOp,
    EmitC_RemOp,
    EmitC_BitwiseLeftShiftOp,
    EmitC_BitwiseRightShiftOp,
    EmitC_UnaryMinusOp,
)
"""Ops whose C result is an `int` (not yet wrapped) when their type is narrower."""


def _single_line(text: str, what: str) -> str:
    try:
        check_single_line(text, what)
    except DiagnosticException as err:
        raise CEmissionError(str(err)) from err
    return text


def _braced(values: list[str], shape: tuple[int, ...]) -> str:
    """A C initializer list of row-major `values`, one brace level per dimension."""
    if len(shape) <= 1:
        return "{" + ", ".join(values) + "}"
    step = len(values) // shape[0] if shape[0] else 0
    rows = (_braced(values[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0]))
    return "{" + ", ".join(rows) + "}"


def _is_sizeof(op: Operation) -> bool:
    return isinstance(op, EmitC_CallOpaqueOp) and op.callee.data == "sizeof"


def _is_removable(op: Operation) -> bool:
    """Whether `op` may be left out when none of its results is used."""
    if isinstance(op, EmitC_AddOp | EmitC_VariableOp) or _is_sizeof(op):
        return True
    if isinstance(op, EmitC_ApplyOp):
        return op.applicableOperator.data == "&"
    return would_be_trivially_dead(op)


def dead_operations(block: Block, dead: set[Operation]) -> None:
    """Add to `dead` the ops of `block` (and nested) whose results no live op uses.

    One backward sweep: every use of a value comes after its definition, either
    later in the block or nested in a later op, so it is decided first.
    """
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for nested in region.blocks:
                dead_operations(nested, dead)
        # Uses first: most ops have a live one, and `_is_removable` asks for
        # memory effects, which walk a loop's whole body.
        if all(
            use.operation in dead for result in op.results for use in result.uses
        ) and _is_removable(op):
            dead.add(op)


@dataclass(eq=False, repr=False)
class CPrinter:
    """Prints emitc ops as C; `headers` collects the headers the printed code needs."""

    stream: IO[str]
    headers: dict[str, None] = field(default_factory=dict[str, None])
    _symbols: dict[str, str] = field(default_factory=dict[str, str])
    _symbol_owners: dict[str, str] = field(default_factory=dict[str, str])
    _functions: dict[str, EmitC_FuncOp] = field(default_factory=dict[str, EmitC_FuncOp])
    _names: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    _expressions: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    _dead: set[Operation] = field(default_factory=set[Operation])
    _unused: set[Operation] = field(default_factory=set[Operation])
    _count: int = 0
    _depth: int = 0

    # -- helpers ------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.stream.write("  " * self._depth + text + "\n")

    @contextmanager
    def indented(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _need(self, name: str) -> None:
        if (header := _HEADER_OF_NAME.get(name)) is not None:
            self.headers.setdefault(f"<{header}>")

    def _need_all(self, text: str) -> None:
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
            self._need(word)

    def _symbol(self, name: str) -> str:
        ident = self._symbols.get(name)
        if ident is None:
            ident = self._declare_symbol(name)
        return ident

    def _declare_symbol(self, name: str) -> str:
        ident = c_identifier(name)
        other = self._symbol_owners.setdefault(ident, name)
        if other != name:
            raise CEmissionError(
                f"symbols @{other} and @{name} would both be named '{ident}' in C"
            )
        self._symbols[name] = ident
        return ident

    def _fresh(self) -> str:
        name = f"v{self._count}"
        self._count += 1
        return name

    def opaque_text(self, text: str, what: str) -> str:
        """Text of an opaque value or literal, checked to be one plain C expression."""
        _single_line(text, what)
        if _OPAQUE_VALUE_FORBIDDEN.search(text):
            raise CEmissionError(f"{what} is not a plain C expression: {text!r}")
        self._need_all(text)
        return text

    def c_type(self, t: Attribute) -> str:
        """The C spelling of a scalar or pointer type."""
        if isinstance(t, IntegerType):
            width = t.width.data
            if width == 1:
                name = "bool"
            elif width in (8, 16, 32, 64):
                unsigned = t.signedness.data == Signedness.UNSIGNED
                name = f"{'u' if unsigned else ''}int{width}_t"
            else:
                raise CEmissionError(f"no C type for {t}")
        elif isinstance(t, Float32Type):
            return "float"
        elif isinstance(t, Float64Type):
            return "double"
        elif isinstance(t, IndexType | EmitC_SizeT):
            name = "size_t"
        elif isinstance(t, EmitC_PtrDiffT):
            name = "ptrdiff_t"
        elif isinstance(t, EmitC_PointerType):
            return self.c_type(t.pointee_type) + "*"
        elif isinstance(t, EmitC_LValueType):
            return self.c_type(t.value_type)
        elif isinstance(t, EmitC_OpaqueType):
            text = t.value.data
            if not _OPAQUE_TYPE.fullmatch(text):
                raise CEmissionError(f"opaque type {text!r} is not a plain C type name")
            self._need_all(text)
            return text
        else:
            raise CEmissionError(f"no C type for {t}")
        self._need(name)
        return name

    def declaration(self, t: Attribute, name: str) -> str:
        """`T name`, or `T name[N]...` for arrays."""
        if isinstance(t, EmitC_LValueType):
            t = t.value_type
        if isinstance(t, EmitC_ArrayType):
            dims = "".join(f"[{d}]" for d in t.get_shape())
            return f"{self.c_type(t.element_type)} {name}{dims}"
        return f"{self.c_type(t)} {name}"

    def constant(self, value: Attribute, t: Attribute) -> str:
        """A C expression for a constant attribute of type `t`."""
        if isinstance(value, EmitC_OpaqueAttr):
            return self.opaque_text(value.value.data, "opaque value")
        if isinstance(value, IntegerAttr):
            text = c_int_literal(value.value.data, t)
        elif isinstance(value, FloatAttr):
            text = c_float_literal(value.value.data, t)
        else:
            raise CEmissionError(f"cannot print {value} as a C constant")
        self._need_all(text)
        return text

    def initializer(self, value: Attribute, t: Attribute) -> str:
        """The initializer of a variable or global of type `t`."""
        if isinstance(value, DenseIntOrFPElementsAttr):
            assert isinstance(t, EmitC_ArrayType)
            element = t.element_type
            literal = (
                c_int_literal
                if isinstance(element, IntegerType | IndexType)
                else c_float_literal
            )
            if isinstance(element, Float32Type):
                values = c_float32_literals(np.frombuffer(value.data.data, "<f4"))
            else:
                values = [literal(v, element) for v in value.get_values()]  # type: ignore
            for v in set(values):
                self._need_all(v)
            return _braced(values, t.get_shape())
        return self.constant(value, t)

    def value(self, v: SSAValue) -> str:
        """The C expression of an SSA value (a local, a name or an inlined expression)."""
        try:
            return self._names[v]
        except KeyError:
            raise CEmissionError(f"value {v} is used before it is printed") from None

    def bare(self, v: SSAValue) -> str:
        """`value(v)` without the parentheses of an inlined expression, for statements."""
        return self._expressions.get(v) or self.value(v)

    def _inline(self, op: Operation) -> bool:
        """Whether the pure expression `op` is printed at its only use."""
        uses = [u for u in op.results[0].uses if u.operation not in self._dead]
        if len(uses) != 1 or uses[0].operation.parent_block() is not op.parent_block():
            return False
        t = op.results[0].type
        narrow = isinstance(t, IntegerType) and t.width.data < 32
        return not (narrow and isinstance(op, _WRAPPING_OPS))

    def bind(self, op: Operation, text: str) -> None:
        """Give the result of `op`, computed by the C expression `text`, its C name.

        A pure expression used once, later in the same block, is inlined there.
        """
        result = op.results[0]
        if len(text) <= MAX_INLINE_LENGTH and self._inline(op):
            self._names[result] = text if _ATOM.fullmatch(text) else f"({text})"
            self._expressions[result] = text
        else:
            name = self._fresh()
            self._line(f"{self.declaration(result.type, name)} = {text};")
            self._names[result] = name

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            if op not in self._dead:
                self.print_op(op)

    def _call(self, op: Operation, callee: str, args: Iterable[str]) -> None:
        text = f"{callee}({', '.join(args)})"
        if not op.results:
            self._line(f"{text};")
        elif all(u.operation in self._dead for u in op.results[0].uses):
            self._line(f"{text};")
        else:
            name = self._fresh()
            self._line(f"{self.declaration(op.results[0].type, name)} = {text};")
            self._names[op.results[0]] = name

    # -- module level -------------------------------------------------------

    def print_module(self, module: ModuleOp) -> None:
        globals_: dict[str, EmitC_GlobalOp] = {}
        for op in module.ops:
            if isinstance(op, EmitC_FuncOp):
                self._functions[op.sym_name.data] = op
                self._declare_symbol(op.sym_name.data)
                if not op.is_declaration:
                    dead_operations(op.body.block, self._dead)
            elif isinstance(op, EmitC_GlobalOp):
                globals_[op.sym_name.data] = op
                self._declare_symbol(op.sym_name.data)
        self._unused = self._unused_statics(globals_)
        for op in module.ops:
            if op not in self._unused:
                self.print_op(op)

    def _live_ops(self, block: Block) -> Iterator[Operation]:
        for op in block.ops:
            if op in self._dead:
                continue
            yield op
            for region in op.regions:
                for nested in region.blocks:
                    yield from self._live_ops(nested)

    def _unused_statics(self, globals_: dict[str, EmitC_GlobalOp]) -> set[Operation]:
        """The static functions and globals that no printed code refers to.

        They are left out: nothing outside the file can see them, and a C compiler
        warns about them.
        """

        def is_static(op: EmitC_FuncOp) -> bool:
            return any(s.data == "static" for s in op.specifiers or ())

        reached: set[str] = set()
        used_globals: set[str] = set()
        stack = [
            name
            for name, f in self._functions.items()
            if not f.is_declaration and not is_static(f)
        ]
        reached.update(stack)
        while stack:
            func = self._functions[stack.pop()]
            if func.is_declaration:
                continue
            for op in self._live_ops(func.body.block):
                if isinstance(op, EmitC_CallOp):
                    callee = op.callee.string_value()
                    if callee not in reached and callee in self._functions:
                        reached.add(callee)
                        stack.append(callee)
                elif isinstance(op, EmitC_GetGlobalOp):
                    used_globals.add(op.global_name.string_value())
        unused: set[Operation] = {
            f
            for name, f in self._functions.items()
            if is_static(f) and name not in reached
        }
        unused |= {
            g
            for name, g in globals_.items()
            if g.static_specifier is not None and name not in used_globals
        }
        return unused

    @singledispatchmethod
    def print_op(self, op: Operation) -> None:
        raise CEmissionError(f"cannot print '{op.name}' as C")

    @print_op.register
    def _(self, op: EmitC_IncludeOp) -> None:
        name = op.include.data
        self.headers.setdefault(
            f"<{name}>" if op.is_standard_include is not None else f'"{name}"'
        )

    @print_op.register
    def _(self, op: EmitC_VerbatimOp) -> None:
        if not op.fmtArgs:
            text = op.value.data
        else:
            args = [self.bare(a) for a in op.fmtArgs]
            text = "".join(
                p if isinstance(p, str) else args[p] for p in op.format_pieces()
            )
        self._line(_single_line(text, "emitc.verbatim text"))

    @print_op.register
    def _(self, op: EmitC_GlobalOp) -> None:
        specifiers = "".join(
            f"{keyword} "
            for keyword, flag in (
                ("extern", op.extern_specifier),
                ("static", op.static_specifier),
                ("const", op.const_specifier),
            )
            if flag is not None
        )
        text = specifiers + self.declaration(op.type, self._symbol(op.sym_name.data))
        if op.initial_value is not None:
            text += " = " + self.initializer(op.initial_value, op.type)
        self._line(text + ";")

    def _signature(self, op: EmitC_FuncOp, names: list[str] | None) -> str:
        specifiers = "".join(f"{s.data} " for s in op.specifiers or ())
        outputs = op.function_type.outputs.data
        result = self.c_type(outputs[0]) if outputs else "void"
        params: list[str] = []
        for i, t in enumerate(op.function_type.inputs.data):
            name = f" {names[i]}" if names is not None else ""
            if isinstance(t, EmitC_PointerType):
                pointee = self.c_type(t.pointee_type)
                if op.arg_attr(i, CONST_ATTR):
                    text = (
                        f"{pointee} const*"
                        if isinstance(t.pointee_type, EmitC_PointerType)
                        else f"const {pointee}*"
                    )
                else:
                    text = f"{pointee}*"
                if op.arg_attr(i, RESTRICT_ATTR):
                    text += " restrict"
                params.append(text + name)
            else:
                params.append(self.c_type(t) + name)
        symbol = self._symbol(op.sym_name.data)
        return f"{specifiers}{result} {symbol}({', '.join(params) or 'void'})"

    @print_op.register
    def _(self, op: EmitC_DeclareFuncOp) -> None:
        func = self._functions.get(op.sym_name.string_value())
        if func is None:
            raise CEmissionError(
                f"emitc.declare_func: no emitc.func named @{op.sym_name.string_value()}"
            )
        if func in self._unused:
            return
        self._line(self._signature(func, None) + ";")

    @print_op.register
    def _(self, op: EmitC_FuncOp) -> None:
        if op.is_declaration:
            self._line(self._signature(op, None) + ";")
            return
        self._count = 0
        self._names = {}
        self._expressions = {}
        names = [self._fresh() for _ in op.body.block.args]
        self._names.update(zip(op.body.block.args, names))
        self._line(self._signature(op, names) + " {")
        with self.indented():
            for arg, name in zip(op.body.block.args, names):
                if all(u.operation in self._dead for u in arg.uses):
                    self._line(f"(void){name};")
            self.print_block(op.body.block)
        self._line("}")
        self._line("")

    # -- statements ---------------------------------------------------------

    @print_op.register
    def _(self, op: EmitC_ReturnOp) -> None:
        if op.operand is None:
            self._line("return;")
        else:
            self._line(f"return {self.bare(op.operand)};")

    @print_op.register
    def _(self, op: EmitC_YieldOp) -> None:
        pass

    @print_op.register
    def _(self, op: EmitC_ForOp) -> None:
        iv = op.induction_variable
        name = self._fresh()
        self._names[iv] = name
        # The bound sits inside `<`: an inlined expression keeps its parentheses.
        lb, step = self.bare(op.lowerBound), self.bare(op.step)
        ub = self.value(op.upperBound)
        self._line(
            f"for ({self.c_type(iv.type)} {name} = {lb}; {name} < {ub}; {name} += {step}) {{"
        )
        with self.indented():
            self.print_block(op.region.block)
        self._line("}")

    @print_op.register
    def _(self, op: EmitC_IfOp) -> None:
        self._line(f"if ({self.bare(op.condition)}) {{")
        with self.indented():
            self.print_block(op.thenRegion.block)
        else_ops = (
            [o for o in op.elseRegion.block.ops if not isinstance(o, EmitC_YieldOp)]
            if op.elseRegion.blocks
            else []
        )
        if any(o not in self._dead for o in else_ops):
            self._line("} else {")
            with self.indented():
                self.print_block(op.elseRegion.block)
        self._line("}")

    @print_op.register
    def _(self, op: EmitC_AssignOp) -> None:
        self._line(f"{self.value(op.var)} = {self.bare(op.value)};")

    @print_op.register
    def _(self, op: EmitC_CallOp) -> None:
        self._call(
            op, self._symbol(op.callee.string_value()), (self.bare(a) for a in op.args)
        )

    @print_op.register
    def _(self, op: EmitC_CallOpaqueOp) -> None:
        callee = op.callee.data
        if not _C_IDENTIFIER.fullmatch(callee) or (
            callee in C_KEYWORDS and callee != "sizeof"
        ):
            raise CEmissionError(f"call_opaque callee {callee!r} is not a C function name")
        if op.template_args is not None:
            raise CEmissionError("C has no template arguments")
        self._need(callee)
        if op.args is None:
            args = [self.bare(a) for a in op.call_args]
        else:
            args = [self._call_argument(op, a) for a in op.args.data]
        if callee == "sizeof":  # an operator: a pure expression
            self.bind(op, f"sizeof({', '.join(args)})")
        else:
            self._call(op, callee, args)

    def _call_argument(self, op: EmitC_CallOpaqueOp, arg: Attribute) -> str:
        if isinstance(arg, IntegerAttr) and isinstance(arg.type, IndexType):
            return self.bare(op.call_args[arg.value.data])
        if isinstance(arg, TypeAttribute):
            return self.c_type(arg)
        if isinstance(arg, IntegerAttr | FloatAttr):
            return self.constant(arg, arg.type)
        return self.constant(arg, arg)

    # -- values -------------------------------------------------------------

    @print_op.register
    def _(self, op: EmitC_ConstantOp) -> None:
        text = self.constant(op.value, op.result.type)
        self._names[op.result] = text if _ATOM.fullmatch(text) else f"({text})"

    @print_op.register
    def _(self, op: EmitC_LiteralOp) -> None:
        text = self.opaque_text(op.value.data, "emitc.literal")
        self._names[op.result] = text if _ATOM.fullmatch(text) else f"({text})"

    @print_op.register
    def _(self, op: EmitC_GetGlobalOp) -> None:
        self._names[op.result] = self._symbol(op.global_name.string_value())

    @print_op.register
    def _(self, op: EmitC_VariableOp) -> None:
        name = self._fresh()
        self._names[op.result] = name
        text = self.declaration(op.result.type, name)
        value_type = op.result.type
        if isinstance(value_type, EmitC_LValueType):
            value_type = value_type.value_type
        if not (isinstance(op.value, EmitC_OpaqueAttr) and not op.value.value.data):
            text += " = " + self.initializer(op.value, value_type)
        self._line(text + ";")
        if self._only_written(op.result):
            self._line(f"(void){name};")

    def _only_written(self, lvalue: SSAValue) -> bool:
        """Whether every live use of a variable writes it (C would warn it is unused)."""
        for use in lvalue.uses:
            user = use.operation
            if user in self._dead:
                continue
            if isinstance(user, EmitC_AssignOp) and use.index == 0:
                continue
            if isinstance(user, EmitC_SubscriptOp) and use.index == 0:
                if self._only_written(user.result):
                    continue
            return False
        return True

    @print_op.register
    def _(self, op: EmitC_SubscriptOp) -> None:
        indices = "".join(f"[{self.bare(i)}]" for i in op.indices)
        self._names[op.result] = f"{self.value(op.value)}{indices}"

    @print_op.register
    def _(self, op: EmitC_LoadOp) -> None:
        name = self._fresh()
        self._line(f"{self.declaration(op.result.type, name)} = {self.value(op.operand)};")
        self._names[op.result] = name

    @print_op.register
    def _(self, op: EmitC_CmpOp) -> None:
        predicate = op.predicate_name
        if predicate not in _CMP_OPERATORS:
            raise CEmissionError(f"emitc.cmp {predicate} has no C operator")
        operator = _CMP_OPERATORS[predicate]
        self.bind(op, f"{self.value(op.lhs)} {operator} {self.value(op.rhs)}")

    @print_op.register
    def _(self, op: EmitC_CastOp) -> None:
        self.bind(op, f"({self.c_type(op.dest.type)}) {self.value(op.source)}")

    @print_op.register
    def _(self, op: EmitC_ConditionalOp) -> None:
        c, a, b = (self.value(v) for v in op.operands)
        self.bind(op, f"{c} ? {a} : {b}")

    @print_op.register
    def _(self, op: EmitC_LogicalNotOp) -> None:
        self.bind(op, f"!{self.value(op.operand)}")

    @print_op.register
    def _(self, op: EmitC_UnaryMinusOp) -> None:
        self.bind(op, f"-{self.value(op.operand)}")

    @print_op.register
    def _(self, op: EmitC_ApplyOp) -> None:
        operand = self.value(op.operand)
        if op.applicableOperator.data == "&":
            self.bind(op, f"&{operand}")
        else:
            name = self._fresh()
            self._line(f"{self.declaration(op.result.type, name)} = *{operand};")
            self._names[op.result] = name

    def _binary(self, op: Operation) -> None:
        lhs, rhs = (self.value(v) for v in op.operands)
        self.bind(op, f"{lhs} {_BINARY_OPERATORS[type(op)]} {rhs}")


for _op_type in _BINARY_OPERATORS:
    CPrinter.print_op.register(_op_type, CPrinter._binary)  # pyright: ignore


def print_c(module: ModuleOp, stream: IO[str]) -> None:
    """Print the emitc module `module` as C source to `stream`."""
    body = io.StringIO()
    printer = CPrinter(stream=body)
    printer.print_module(module)
    for header in sorted(printer.headers, key=lambda h: (h.startswith('"'), h)):
        print(f"#include {header}", file=stream)
    if printer.headers:
        print(file=stream)
    stream.write(body.getvalue())


def emit_c(module: ModuleOp) -> str:
    """The C source of the emitc module `module`."""
    stream = io.StringIO()
    print_c(module, stream)
    return stream.getvalue()


@dataclass(frozen=True)
class CTarget(Target):
    """`-t c`: print an emitc module as C."""

    name = "c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        print_c(module, output)
