"""xDSL's emitc dialect extended with MLIR's EmitC operations needed to express C kernels.

The ops keep MLIR's names, operands and custom syntax (mlir/Dialect/EmitC/IR/EmitC.td),
including the lvalue model: `emitc.variable` and `emitc.subscript` yield
`!emitc.lvalue<T>`, `emitc.load` reads one and `emitc.assign` writes one.
`byoc.targets.c` prints a module of these ops as C source.

Two additions are byoc's own, both MLIR-shaped:

- C qualifiers of pointer parameters are argument attributes of `emitc.func`:
  `emitc.restrict` (the parameter is `T* restrict`) and `emitc.const` (the pointee is
  const, `const T*`), e.g. `emitc.func @f(%a: !emitc.ptr<f32> {emitc.const, emitc.restrict})`.
- Text copied verbatim into the C output (`emitc.verbatim`, `emitc.literal`,
  `emitc.include`, function specifiers) is checked by the verifiers so that it cannot
  start a new line: a new line would let the text inject preprocessor directives.
  (The strings of xDSL's `!emitc.opaque` types and `#emitc.opaque` values are checked
  the same way by the C printer.) Symbol names are never copied: the printer turns
  them into safe identifiers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.dialects.emitc import EmitC as _XDSL_EMITC
from xdsl.dialects.emitc import (
    EmitC_AddOp,
    EmitC_ApplyOp,
    EmitC_ArrayType,
    EmitC_BinaryOperation,
    EmitC_CallOpaqueOp,
    EmitC_LValueType,
    EmitC_OpaqueAttr,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_PtrDiffT,
    EmitC_SignedSizeT,
    EmitC_SizeT,
    EmitCFloatType,
    EmitCTypeConstr,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    VerificationContext,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

RESTRICT_ATTR = "emitc.restrict"
"""Argument attribute of `emitc.func`: the pointer parameter is `restrict`-qualified."""

CONST_ATTR = "emitc.const"
"""Argument attribute of `emitc.func`: the pointee of the parameter is `const`."""

NOINLINE = "__attribute__((noinline))"
"""GNU C's `noinline`: keeps a bounded part of a split function apart."""

FUNC_SPECIFIERS = frozenset({"static", "inline", "extern", NOINLINE})
"""The C specifiers an `emitc.func` may carry (they are printed as written)."""

_LINE_BREAKS = re.compile(r"[\n\r\x00\x0b\x0c\u0085\u2028\u2029]")


def check_single_line(text: str, what: str) -> None:
    """Raise if `text`, copied verbatim into C, could end its line.

    A line break would let the text start a preprocessor directive of its own; a
    trailing backslash (or its trigraph `??/`) would splice the next line into it.
    """
    if _LINE_BREAKS.search(text):
        raise VerifyException(f"{what} must not contain a line break: {text!r}")
    if text.endswith("\\") or text.endswith("??/"):
        raise VerifyException(f"{what} must not end with a line continuation: {text!r}")


def _is_integral(t: Attribute) -> bool:
    return isinstance(
        t, IntegerType | IndexType | EmitC_SizeT | EmitC_PtrDiffT | EmitC_SignedSizeT
    )


def _is_arithmetic(t: Attribute) -> bool:
    return _is_integral(t) or isinstance(t, EmitCFloatType)


# ---------------------------------------------------------------------------
# Functions, calls, module-level declarations
# ---------------------------------------------------------------------------


class FuncOpCallableInterface(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        assert isinstance(op, EmitC_FuncOp)
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, EmitC_FuncOp)
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, EmitC_FuncOp)
        return op.function_type.outputs.data


@irdl_op_definition
class EmitC_FuncOp(IRDLOperation):
    """
    A C function: one region whose entry block arguments are the parameters, or no
    region for a declaration (printed as a prototype).

    `specifiers` are C specifiers printed before the return type (`static`,
    `inline`, `extern`). Pointer parameters may carry the argument attributes
    `emitc.restrict` and `emitc.const`.

    ```mlir
    emitc.func @f(%arg0: !emitc.ptr<f32> {emitc.const, emitc.restrict}) -> i32
        attributes {specifiers = ["static"]} { ... }
    emitc.func private @g(!emitc.ptr<f32>) -> i32 attributes {specifiers = ["extern"]}
    ```
    """

    name = "emitc.func"

    body = region_def()
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    specifiers = opt_prop_def(ArrayAttr[StringAttr])
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(
        IsolatedFromAbove(), SymbolOpInterface(), FuncOpCallableInterface()
    )

    def __init__(
        self,
        name: str,
        function_type: FunctionType,
        region: Region | None = None,
        *,
        specifiers: Sequence[str] = (),
        visibility: str | None = None,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
    ):
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "specifiers": (
                    ArrayAttr(StringAttr(s) for s in specifiers) if specifiers else None
                ),
                "sym_visibility": StringAttr(visibility) if visibility else None,
                "arg_attrs": arg_attrs,
                "res_attrs": res_attrs,
            },
            regions=[region],
        )

    @property
    def is_declaration(self) -> bool:
        return not self.body.blocks

    def arg_attr(self, index: int, name: str) -> bool:
        """Whether parameter `index` carries the unit argument attribute `name`."""
        if self.arg_attrs is None:
            return False
        return name in self.arg_attrs.data[index].data

    def verify_(self) -> None:
        inputs = self.function_type.inputs.data
        if len(self.function_type.outputs) > 1:
            raise VerifyException("a C function returns at most one value")
        if self.specifiers is not None:
            for s in self.specifiers.data:
                if s.data not in FUNC_SPECIFIERS:
                    raise VerifyException(
                        f"unknown specifier {s.data!r}, expected one of "
                        f"{sorted(FUNC_SPECIFIERS)}"
                    )
        if self.arg_attrs is not None:
            if len(self.arg_attrs) != len(inputs):
                raise VerifyException("expected one argument attribute dict per input")
            for t, attrs in zip(inputs, self.arg_attrs.data):
                for key in (RESTRICT_ATTR, CONST_ATTR):
                    if key in attrs.data and not isinstance(t, EmitC_PointerType):
                        raise VerifyException(f"{key} only applies to pointer arguments")
        if self.is_declaration:
            return
        if self.body.blocks.first.arg_types != inputs:  # pyright: ignore
            raise VerifyException(
                "Expected entry block arguments to have the same types as the "
                "function input types"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_FuncOp:
        visibility = parser.parse_optional_visibility_keyword()
        name = parser.parse_symbol_name().data

        def parse_input() -> tuple[Parser.Argument | Attribute, dict[str, Attribute]]:
            arg = parser.parse_optional_argument()
            item = arg if arg is not None else parser.parse_type()
            return item, parser.parse_optional_dictionary_attr_dict()

        inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_input)
        named = [a for a, _ in inputs if isinstance(a, Parser.Argument)]
        if named and len(named) != len(inputs):
            parser.raise_error("Expected all arguments to be named or all unnamed.")
        input_types = [a.type if isinstance(a, Parser.Argument) else a for a, _ in inputs]
        arg_attrs = (
            ArrayAttr(DictionaryAttr(attrs) for _, attrs in inputs)
            if any(attrs for _, attrs in inputs)
            else None
        )

        outputs: list[Attribute] = []
        if parser.parse_optional_punctuation("->"):
            parsed = parser.parse_optional_comma_separated_list(
                parser.Delimiter.PAREN, parser.parse_type
            )
            outputs = parsed if parsed is not None else [parser.parse_type()]

        extra = parser.parse_optional_attr_dict_with_keyword(
            ("sym_name", "function_type", "sym_visibility", "arg_attrs")
        )
        attributes = dict(extra.data) if extra is not None else {}
        specifiers = attributes.pop("specifiers", None)

        region = parser.parse_optional_region(named if named else None)
        if region is None:
            if named:
                parser.raise_error("a declaration takes unnamed argument types")
            region = Region()

        op = cls(
            name,
            FunctionType.from_lists(input_types, outputs),
            region,
            visibility=visibility.data if visibility else None,
            arg_attrs=arg_attrs,
        )
        if specifiers is not None:
            op.properties["specifiers"] = specifiers
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility is not None:
            printer.print_string(f" {self.sym_visibility.data}")
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        attr_dicts = (
            self.arg_attrs.data
            if self.arg_attrs is not None
            else (DictionaryAttr({}),) * len(self.function_type.inputs)
        )

        def print_input(item: tuple[BlockArgument | Attribute, DictionaryAttr]):
            arg, attrs = item
            if isinstance(arg, BlockArgument):
                printer.print_block_argument(arg)
            else:
                printer.print_attribute(arg)
            if attrs.data:
                printer.print_string(" ")
                printer.print_attr_dict(attrs.data)

        items: Sequence[BlockArgument | Attribute] = (
            self.function_type.inputs.data
            if self.is_declaration
            else self.body.block.args
        )
        with printer.in_parens():
            printer.print_list(zip(items, attr_dicts), print_input)
        if self.function_type.outputs.data:
            printer.print_string(" -> ")
            printer.print_attribute(self.function_type.outputs.data[0])
        attributes = dict(self.attributes)
        if self.specifiers is not None:
            attributes = {"specifiers": self.specifiers} | attributes
        printer.print_op_attributes(attributes, print_keyword=True)
        if not self.is_declaration:
            printer.print_string(" ")
            printer.print_region(self.body, False, False)


@irdl_op_definition
class EmitC_ReturnOp(IRDLOperation):
    """Returns from the enclosing `emitc.func`, optionally with a value (`return x;`)."""

    name = "emitc.return"

    operand = opt_operand_def(EmitCTypeConstr)

    traits = traits_def(Pure(), HasParent(EmitC_FuncOp), IsTerminator(), ReturnLike())

    assembly_format = "attr-dict ($operand^ `:` type($operand))?"

    def __init__(self, value: SSAValue | Operation | None = None):
        super().__init__(operands=[[value] if value is not None else []])

    def verify_(self) -> None:
        func = self.parent_op()
        if not isinstance(func, EmitC_FuncOp):
            return
        expected = func.function_type.outputs.data
        got = (self.operand.type,) if self.operand is not None else ()
        if expected != got:
            raise VerifyException(
                f"return types {got} do not match the function's {expected}"
            )


@irdl_op_definition
class EmitC_CallOp(IRDLOperation):
    """
    A direct call of an `emitc.func` by symbol: `%r = emitc.call @f(%a) : (i32) -> i32`.

    The callee is not resolved by the verifier, which keeps module verification
    linear in the number of calls.
    """

    name = "emitc.call"

    callee = prop_def(FlatSymbolRefAttrConstr)
    args = var_operand_def(EmitCTypeConstr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res = var_result_def(EmitCTypeConstr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$callee `(` $args `)` attr-dict `:` functional-type($args, results)"
    )

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(
            operands=[args], result_types=[result_types], properties={"callee": callee}
        )

    def verify_(self) -> None:
        if len(self.res) > 1:
            raise VerifyException("a C call returns at most one value")


@irdl_op_definition
class EmitC_DeclareFuncOp(IRDLOperation):
    """Emits the prototype of the `emitc.func` named `sym_name` at this position."""

    name = "emitc.declare_func"

    sym_name = prop_def(FlatSymbolRefAttrConstr)

    assembly_format = "$sym_name attr-dict"

    def __init__(self, sym_name: str | SymbolRefAttr):
        if isinstance(sym_name, str):
            sym_name = SymbolRefAttr(sym_name)
        super().__init__(properties={"sym_name": sym_name})


_HEADER_NAME = re.compile(r"[A-Za-z0-9_./+-]+")


@irdl_op_definition
class EmitC_IncludeOp(IRDLOperation):
    """
    `#include <name>` (`emitc.include <"name">`) or `#include "name"`
    (`emitc.include "name"`). Names are restricted to `[A-Za-z0-9_./+-]`.
    """

    name = "emitc.include"

    include = prop_def(StringAttr)
    is_standard_include = opt_prop_def(UnitAttr)

    def __init__(self, include: str, is_standard_include: bool = True):
        super().__init__(
            properties={
                "include": StringAttr(include),
                "is_standard_include": UnitAttr() if is_standard_include else None,
            }
        )

    def verify_(self) -> None:
        if not _HEADER_NAME.fullmatch(self.include.data):
            raise VerifyException(
                f"invalid header name {self.include.data!r}: expected [A-Za-z0-9_./+-]+"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_IncludeOp:
        standard = parser.parse_optional_punctuation("<") is not None
        include = parser.parse_str_literal()
        if standard:
            parser.parse_punctuation(">")
        op = cls(include, standard)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.is_standard_include is not None:
            with printer.in_angle_brackets():
                printer.print_string_literal(self.include.data)
        else:
            printer.print_string_literal(self.include.data)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class EmitC_VerbatimOp(IRDLOperation):
    """
    One line of C copied as is; with `args`, each `{}` is replaced by the C name of the
    next operand and `{{` stands for `{`. The verifier rejects line breaks and a
    trailing line continuation, so verbatim text can never start a preprocessor line.
    """

    name = "emitc.verbatim"

    value = prop_def(StringAttr)
    fmtArgs = var_operand_def(AnyAttr())

    assembly_format = "$value (`args` $fmtArgs^ `:` type($fmtArgs))? attr-dict"

    def __init__(self, value: str, fmt_args: Sequence[SSAValue | Operation] = ()):
        super().__init__(properties={"value": StringAttr(value)}, operands=[fmt_args])

    def format_pieces(self) -> list[str | int]:
        """The format string split into text pieces and operand indices."""
        text = self.value.data
        pieces: list[str | int] = []
        current: list[str] = []
        count = 0
        i = 0
        while i < len(text):
            if text.startswith("{{", i):
                current.append("{")
                i += 2
            elif text.startswith("{}", i):
                pieces.append("".join(current))
                current = []
                pieces.append(count)
                count += 1
                i += 2
            else:
                current.append(text[i])
                i += 1
        pieces.append("".join(current))
        return pieces

    def verify_(self) -> None:
        check_single_line(self.value.data, "emitc.verbatim text")
        placeholders = sum(isinstance(p, int) for p in self.format_pieces())
        if self.fmtArgs and placeholders != len(self.fmtArgs):
            raise VerifyException(
                f"format string has {placeholders} placeholders but "
                f"{len(self.fmtArgs)} operands"
            )


# ---------------------------------------------------------------------------
# Values: constants, literals, variables, globals, lvalues
# ---------------------------------------------------------------------------

_TypedValueAttr = IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr


def _check_value_attr(value: Attribute, value_type: Attribute, what: str) -> None:
    """Check that `value` can initialise a C object of `value_type`."""
    if isinstance(value, EmitC_OpaqueAttr):
        check_single_line(value.value.data, f"{what} opaque value")
        return
    if isinstance(value_type, EmitC_ArrayType):
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise VerifyException(f"{what} of array type needs a dense initial value")
        if (
            value.get_shape() != value_type.get_shape()
            or value.get_element_type() != value_type.element_type
        ):
            raise VerifyException(
                f"{what}: initial value {value.type} does not match {value_type}"
            )
        return
    if not isa(value, IntegerAttr | FloatAttr):
        raise VerifyException(f"{what} expects an integer, float or opaque value")
    pointer_wide = isinstance(value_type, EmitC_SizeT | EmitC_PtrDiffT | EmitC_SignedSizeT)
    if pointer_wide and isinstance(value.get_type(), IndexType):
        return  # as in MLIR, pointer-wide constants are given as index attributes
    if value.get_type() != value_type:
        raise VerifyException(
            f"{what}: value type {value.get_type()} does not match {value_type}"
        )


def _build(
    op: Operation,
    operands: Sequence[SSAValue | Operation] = (),
    result_types: Sequence[Attribute] = (),
    properties: dict[str, Attribute] | None = None,
) -> None:
    """`Operation.__init__` for the ops below, whose builders pass every operand,
    result type and property themselves (no optional or several variadic
    groups): IRDL's generic builder, which sorts arguments into groups, took
    twice the time of the op itself, and ccompiler builds ~16k ops for
    DenseNet-121. The verifier checks them as it checks any op."""
    Operation.__init__(
        op,
        operands=[SSAValue.get(o) for o in operands],
        result_types=result_types,
        properties=properties or {},
    )


@irdl_op_definition
class EmitC_ConstantOp(IRDLOperation):
    """
    A constant given by an attribute: an integer or float attribute of the result
    type, or `#emitc.opaque<"...">`. As in MLIR it has no custom syntax:
    `%0 = "emitc.constant"() <{value = 42 : i32}> : () -> i32`.
    """

    name = "emitc.constant"

    value = prop_def(base(IntegerAttr) | base(FloatAttr) | base(EmitC_OpaqueAttr))
    result = result_def(EmitCTypeConstr)

    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: Attribute, result_type: Attribute | None = None):
        if result_type is None:
            assert isa(value, IntegerAttr | FloatAttr)
            result_type = value.get_type()
        _build(self, (), [result_type], {"value": value})

    def verify_(self) -> None:
        if isinstance(self.result.type, EmitC_ArrayType):
            raise VerifyException("emitc.constant cannot be an array")
        _check_value_attr(self.value, self.result.type, "emitc.constant")


_LITERAL_FORBIDDEN = re.compile(r"[;{}#\"'\\]|//|/\*")


@irdl_op_definition
class EmitC_LiteralOp(IRDLOperation):
    """
    A C expression given as text, such as `NULL` or `INFINITY`:
    `%0 = emitc.literal "NULL" : !emitc.ptr<f32>`. The text must be a single
    expression: no line break, `;`, braces, `#`, quotes, backslash or comment.
    """

    name = "emitc.literal"

    value = prop_def(StringAttr)
    result = result_def(EmitCTypeConstr)

    traits = traits_def(Pure())

    assembly_format = "$value attr-dict `:` type($result)"

    def __init__(self, value: str, result_type: Attribute):
        _build(self, (), [result_type], {"value": StringAttr(value)})

    def verify_(self) -> None:
        text = self.value.data
        if not text.strip():
            raise VerifyException("emitc.literal must not be empty")
        check_single_line(text, "emitc.literal")
        if _LITERAL_FORBIDDEN.search(text):
            raise VerifyException(f"emitc.literal is not a plain C expression: {text!r}")


@irdl_op_definition
class EmitC_VariableOp(IRDLOperation):
    """
    A local C variable, initialised by `value` (`#emitc.opaque<"">` leaves it
    uninitialised). Scalars are `!emitc.lvalue<T>`, arrays `!emitc.array<...>`.
    Generic syntax only, as in MLIR.
    """

    name = "emitc.variable"

    value = prop_def(
        base(IntegerAttr)
        | base(FloatAttr)
        | base(DenseIntOrFPElementsAttr)
        | base(EmitC_OpaqueAttr)
    )
    result = result_def(base(EmitC_ArrayType) | base(EmitC_LValueType))

    def __init__(self, result_type: Attribute, value: Attribute | None = None):
        if value is None:
            value = EmitC_OpaqueAttr(StringAttr(""))
        _build(self, (), [result_type], {"value": value})

    def verify_(self) -> None:
        t = self.result.type
        value_type = t.value_type if isinstance(t, EmitC_LValueType) else t
        _check_value_attr(self.value, value_type, "emitc.variable")


@irdl_op_definition
class EmitC_GlobalOp(IRDLOperation):
    """
    A global variable, `[extern] [static] [const] T name [= init];`:
    `emitc.global static const @w : !emitc.array<2xf32> = dense<[1.0, 2.0]>`.
    """

    name = "emitc.global"

    sym_name = prop_def(SymbolNameConstraint())
    type = prop_def(TypeAttribute)
    initial_value = opt_prop_def(
        base(IntegerAttr)
        | base(FloatAttr)
        | base(DenseIntOrFPElementsAttr)
        | base(EmitC_OpaqueAttr)
    )
    extern_specifier = opt_prop_def(UnitAttr)
    static_specifier = opt_prop_def(UnitAttr)
    const_specifier = opt_prop_def(UnitAttr)

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        sym_name: str,
        type: TypeAttribute,
        initial_value: Attribute | None = None,
        *,
        extern: bool = False,
        static: bool = False,
        const: bool = False,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "type": type,
                "initial_value": initial_value,
                "extern_specifier": UnitAttr() if extern else None,
                "static_specifier": UnitAttr() if static else None,
                "const_specifier": UnitAttr() if const else None,
            }
        )

    def verify_(self) -> None:
        EmitCTypeConstr.verify(self.type, VerificationContext())
        if isinstance(self.type, EmitC_LValueType):
            raise VerifyException("the type of a global is its value type, not an lvalue")
        if self.extern_specifier is not None and self.static_specifier is not None:
            raise VerifyException("a global cannot be both extern and static")
        if self.initial_value is not None:
            if self.extern_specifier is not None:
                raise VerifyException("an extern global cannot have an initial value")
            _check_value_attr(self.initial_value, self.type, "emitc.global")

    @staticmethod
    def _initializer_type(t: Attribute) -> Attribute:
        if isinstance(t, EmitC_ArrayType):
            return TensorType(t.element_type, t.get_shape())
        return t

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_GlobalOp:
        extern = parser.parse_optional_keyword("extern") is not None
        static = parser.parse_optional_keyword("static") is not None
        const = parser.parse_optional_keyword("const") is not None
        name = parser.parse_symbol_name().data
        parser.parse_punctuation(":")
        type = parser.parse_type()
        initial_value: Attribute | None = None
        if parser.parse_optional_punctuation("="):
            init_type = cls._initializer_type(type)
            if parser.parse_optional_keyword("dense") is not None:
                assert isinstance(init_type, TensorType)
                initial_value = parser.parse_dense_int_or_fp_elements_attr(
                    init_type  # pyright: ignore[reportArgumentType]
                )
            elif isinstance(init_type, IntegerType | IndexType):
                initial_value = IntegerAttr.parse_with_type(parser, init_type)
            elif isinstance(init_type, EmitCFloatType):
                initial_value = FloatAttr.parse_with_type(parser, init_type)
            else:
                initial_value = parser.parse_attribute()
        op = cls(
            name, type, initial_value, extern=extern, static=static, const=const
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        for keyword, flag in (
            ("extern", self.extern_specifier),
            ("static", self.static_specifier),
            ("const", self.const_specifier),
        ):
            if flag is not None:
                printer.print_string(f" {keyword}")
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" : ")
        printer.print_attribute(self.type)
        if self.initial_value is not None:
            printer.print_string(" = ")
            if isa(self.initial_value, _TypedValueAttr):
                self.initial_value.print_without_type(printer)
            else:
                printer.print_attribute(self.initial_value)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class EmitC_GetGlobalOp(IRDLOperation):
    """
    The global `name`: an array, or the lvalue of a scalar global:
    `%w = emitc.get_global @w : !emitc.array<2xf32>`.
    """

    name = "emitc.get_global"

    global_name = prop_def(FlatSymbolRefAttrConstr, prop_name="name")
    result = result_def(base(EmitC_ArrayType) | base(EmitC_LValueType))

    traits = traits_def(Pure())

    assembly_format = "$name `:` type($result) attr-dict"

    def __init__(self, name: str | SymbolRefAttr, result_type: Attribute):
        if isinstance(name, str):
            name = SymbolRefAttr(name)
        _build(self, (), [result_type], {"name": name})


@irdl_op_definition
class EmitC_SubscriptOp(IRDLOperation):
    """
    The lvalue `value[indices...]` of an array (one index per dimension), a pointer
    (one index) or an opaque value:
    `%0 = emitc.subscript %p[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>`.
    """

    name = "emitc.subscript"

    value = operand_def(
        base(EmitC_ArrayType) | base(EmitC_PointerType) | base(EmitC_OpaqueType)
    )
    indices = var_operand_def(EmitCTypeConstr)
    result = result_def(EmitC_LValueType)

    traits = traits_def(Pure())

    assembly_format = (
        "$value `[` $indices `]` attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, value: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        t = SSAValue.get(value).type
        if isinstance(t, EmitC_PointerType):
            element = t.pointee_type
        else:
            assert isinstance(t, EmitC_ArrayType)
            element = t.element_type
        _build(self, [value, *indices], [EmitC_LValueType(element)])

    def verify_(self) -> None:
        t = self.value.type
        result = self.result.type
        assert isinstance(result, EmitC_LValueType)
        if isinstance(t, EmitC_OpaqueType):
            return
        for index in self.indices:
            if not (_is_integral(index.type) or isinstance(index.type, EmitC_OpaqueType)):
                raise VerifyException(f"subscript index of type {index.type} is not integral")
        if isinstance(t, EmitC_PointerType):
            if len(self.indices) != 1:
                raise VerifyException("a pointer subscript takes exactly one index")
            expected = t.pointee_type
        else:
            assert isinstance(t, EmitC_ArrayType)
            if len(self.indices) != t.get_num_dims():
                raise VerifyException("an array subscript takes one index per dimension")
            expected = t.element_type
        if result.value_type != expected:
            raise VerifyException(
                f"subscript result {result} does not match element type {expected}"
            )


@irdl_op_definition
class EmitC_LoadOp(IRDLOperation):
    """Reads the value of an lvalue: `%1 = emitc.load %0 : !emitc.lvalue<f32>`."""

    name = "emitc.load"

    operand = operand_def(EmitC_LValueType)
    result = result_def()

    traits = traits_def(MemoryReadEffect())

    def __init__(self, operand: SSAValue | Operation):
        t = SSAValue.get(operand).type
        assert isinstance(t, EmitC_LValueType)
        _build(self, [operand], [t.value_type])

    def verify_(self) -> None:
        t = self.operand.type
        assert isinstance(t, EmitC_LValueType)
        if self.result.type != t.value_type:
            raise VerifyException(
                f"result type {self.result.type} does not match value type {t.value_type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_LoadOp:
        unresolved = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, EmitC_LValueType):
            parser.raise_error(f"expected an !emitc.lvalue type, got {t}")
        op = cls(parser.resolve_operand(unresolved, t))
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.operand.type)


@irdl_op_definition
class EmitC_AssignOp(IRDLOperation):
    """
    Stores `value` into the lvalue `var` (`var = value;`):
    `emitc.assign %v : f32 to %0 : !emitc.lvalue<f32>`.
    """

    name = "emitc.assign"

    var = operand_def(EmitC_LValueType)
    value = operand_def(EmitCTypeConstr)

    traits = traits_def(MemoryWriteEffect())

    assembly_format = "$value `:` type($value) `to` $var `:` type($var) attr-dict"

    def __init__(self, var: SSAValue | Operation, value: SSAValue | Operation):
        _build(self, [var, value])

    def verify_(self) -> None:
        t = self.var.type
        assert isinstance(t, EmitC_LValueType)
        if t.value_type != self.value.type:
            raise VerifyException(
                f"cannot assign {self.value.type} to an lvalue of {t.value_type}"
            )


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------


@irdl_op_definition
class EmitC_CastOp(IRDLOperation):
    """
    An explicit C cast `(T) x` between arithmetic types, between pointers and
    integers, from an array to a pointer to its elements, and to or from opaque
    types: `%0 = emitc.cast %a : i64 to f32`.
    """

    name = "emitc.cast"

    source = operand_def(EmitCTypeConstr)
    dest = result_def(EmitCTypeConstr)

    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue | Operation, dest_type: Attribute):
        _build(self, [source], [dest_type])

    def verify_(self) -> None:
        src, dst = self.source.type, self.dest.type
        if isinstance(src, EmitC_OpaqueType) or isinstance(dst, EmitC_OpaqueType):
            return
        if _is_arithmetic(src) and _is_arithmetic(dst):
            return
        if isinstance(src, EmitC_PointerType) and (
            isinstance(dst, EmitC_PointerType) or _is_integral(dst)
        ):
            return
        if _is_integral(src) and isinstance(dst, EmitC_PointerType):
            return
        if (
            isinstance(src, EmitC_ArrayType)
            and isinstance(dst, EmitC_PointerType)
            and dst.pointee_type in (src.element_type, EmitC_OpaqueType(StringAttr("void")))
        ):
            return
        raise VerifyException(f"cannot cast {src} to {dst}")


class _ArithmeticBinaryOperation(EmitC_BinaryOperation):
    """A binary C operator on arithmetic operands whose result has their type."""

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        _build(self, [lhs, rhs], [result_type])

    def verify_(self) -> None:
        for t in (self.lhs.type, self.rhs.type, self.result.type):
            if not (_is_arithmetic(t) or isinstance(t, EmitC_OpaqueType)):
                raise VerifyException(f"{self.name} does not apply to {t}")


class _IntegralBinaryOperation(EmitC_BinaryOperation):
    """A binary C operator on integral operands."""

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        _build(self, [lhs, rhs], [result_type])

    def verify_(self) -> None:
        for t in (self.lhs.type, self.rhs.type, self.result.type):
            if not (_is_integral(t) or isinstance(t, EmitC_OpaqueType)):
                raise VerifyException(f"{self.name} only applies to integers, not {t}")


@irdl_op_definition
class EmitC_SubOp(EmitC_BinaryOperation):
    """
    Subtraction `a - b`, also of an integer from a pointer and of two pointers
    (giving `!emitc.ptrdiff_t`): `%0 = emitc.sub %a, %b : (i32, i32) -> i32`.
    """

    name = "emitc.sub"

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        _build(self, [lhs, rhs], [result_type])

    def verify_(self) -> None:
        lhs, rhs, res = self.lhs.type, self.rhs.type, self.result.type
        if isinstance(lhs, EmitC_PointerType):
            if isinstance(rhs, EmitC_PointerType):
                if not isinstance(res, EmitC_PtrDiffT | EmitC_OpaqueType):
                    raise VerifyException("pointer difference must be ptrdiff_t")
            elif not _is_integral(rhs) or res != lhs:
                raise VerifyException("pointer minus integer yields the pointer type")
        elif isinstance(rhs, EmitC_PointerType):
            raise VerifyException("cannot subtract a pointer from a non-pointer")


@irdl_op_definition
class EmitC_MulOp(_ArithmeticBinaryOperation):
    """Multiplication `a * b`: `%0 = emitc.mul %a, %b : (f32, f32) -> f32`."""

    name = "emitc.mul"


@irdl_op_definition
class EmitC_DivOp(_ArithmeticBinaryOperation):
    """
    Division `a / b` (integer division truncates toward zero):
    `%0 = emitc.div %a, %b : (i64, i64) -> i64`.
    """

    name = "emitc.div"


@irdl_op_definition
class EmitC_RemOp(_IntegralBinaryOperation):
    """Integer remainder `a % b`: `%0 = emitc.rem %a, %b : (i64, i64) -> i64`."""

    name = "emitc.rem"


@irdl_op_definition
class EmitC_BitwiseAndOp(_IntegralBinaryOperation):
    """Bitwise and `a & b`: `%0 = emitc.bitwise_and %a, %b : (i32, i32) -> i32`."""

    name = "emitc.bitwise_and"


@irdl_op_definition
class EmitC_BitwiseOrOp(_IntegralBinaryOperation):
    """Bitwise or `a | b`: `%0 = emitc.bitwise_or %a, %b : (i32, i32) -> i32`."""

    name = "emitc.bitwise_or"


@irdl_op_definition
class EmitC_BitwiseXorOp(_IntegralBinaryOperation):
    """Bitwise xor `a ^ b`: `%0 = emitc.bitwise_xor %a, %b : (i32, i32) -> i32`."""

    name = "emitc.bitwise_xor"


@irdl_op_definition
class EmitC_BitwiseLeftShiftOp(_IntegralBinaryOperation):
    """Left shift `a << b`: `%0 = emitc.bitwise_left_shift %a, %b : (ui32, ui32) -> ui32`
    (undefined in C for a negative `a` or `b`, or `b` at least the width:
    lowerings shift unsigned values by amounts in range)."""

    name = "emitc.bitwise_left_shift"


@irdl_op_definition
class EmitC_BitwiseRightShiftOp(_IntegralBinaryOperation):
    """Right shift `a >> b`: `%0 = emitc.bitwise_right_shift %a, %b : (i32, i32) -> i32`
    (arithmetic for a negative signed `a` in GCC and Clang)."""

    name = "emitc.bitwise_right_shift"


@irdl_op_definition
class EmitC_UnaryMinusOp(IRDLOperation):
    """Negation `-a`: `%0 = emitc.unary_minus %a : (f32) -> f32`."""

    name = "emitc.unary_minus"

    operand = operand_def(EmitCTypeConstr)
    result = result_def(EmitCTypeConstr)

    traits = traits_def(Pure())

    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def __init__(self, operand: SSAValue | Operation, result_type: Attribute | None = None):
        if result_type is None:
            result_type = SSAValue.get(operand).type
        super().__init__(operands=[operand], result_types=[result_type])


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge", "three_way")
"""Mnemonics of `emitc.cmp` predicates, indexed by their integer value (as in MLIR)."""


@irdl_op_definition
class EmitC_CmpOp(IRDLOperation):
    """
    Comparison `a OP b` with OP one of `==`, `!=`, `<`, `<=`, `>`, `>=` (predicates
    eq, ne, lt, le, gt, ge; `three_way` is C++ only):
    `%0 = emitc.cmp lt, %a, %b : (f32, f32) -> i1`.
    """

    name = "emitc.cmp"

    predicate = prop_def(IntegerAttr)
    lhs = operand_def(EmitCTypeConstr)
    rhs = operand_def(EmitCTypeConstr)
    result = result_def(EmitCTypeConstr)

    traits = traits_def(Pure())

    def __init__(
        self,
        predicate: str | int,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: Attribute = i1,
    ):
        if isinstance(predicate, str):
            predicate = CMP_PREDICATES.index(predicate)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"predicate": IntegerAttr(predicate, 64)},
        )

    @property
    def predicate_name(self) -> str:
        return CMP_PREDICATES[self.predicate.value.data]

    def verify_(self) -> None:
        if not 0 <= self.predicate.value.data < len(CMP_PREDICATES):
            raise VerifyException(f"unknown predicate {self.predicate.value.data}")

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_CmpOp:
        predicate = parser.parse_identifier()
        if predicate not in CMP_PREDICATES:
            parser.raise_error(f"unknown predicate {predicate!r}, expected {CMP_PREDICATES}")
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        function_type = parser.parse_function_type()
        if len(function_type.inputs) != 2 or len(function_type.outputs) != 1:
            parser.raise_error("expected (lhs, rhs) -> result", pos)
        lhs, rhs = parser.resolve_operands([lhs, rhs], function_type.inputs.data, pos)
        op = cls(predicate, lhs, rhs, function_type.outputs.data[0])
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate_name}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(
            FunctionType.from_lists([self.lhs.type, self.rhs.type], [self.result.type])
        )


class _LogicalBinaryOperation(IRDLOperation):
    lhs = operand_def(EmitCTypeConstr)
    rhs = operand_def(EmitCTypeConstr)
    result = result_def(i1)

    traits = traits_def(Pure())

    assembly_format = "operands attr-dict `:` type(operands)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[i1])


@irdl_op_definition
class EmitC_LogicalAndOp(_LogicalBinaryOperation):
    """Logical and `a && b`: `%0 = emitc.logical_and %a, %b : i1, i1`."""

    name = "emitc.logical_and"


@irdl_op_definition
class EmitC_LogicalOrOp(_LogicalBinaryOperation):
    """Logical or `a || b`: `%0 = emitc.logical_or %a, %b : i1, i1`."""

    name = "emitc.logical_or"


@irdl_op_definition
class EmitC_LogicalNotOp(IRDLOperation):
    """Logical negation `!a`: `%0 = emitc.logical_not %a : i1`."""

    name = "emitc.logical_not"

    operand = operand_def(EmitCTypeConstr)
    result = result_def(i1)

    traits = traits_def(Pure())

    assembly_format = "operands attr-dict `:` type(operands)"

    def __init__(self, operand: SSAValue | Operation):
        super().__init__(operands=[operand], result_types=[i1])


@irdl_op_definition
class EmitC_ConditionalOp(IRDLOperation):
    """
    The ternary operator `cond ? a : b`:
    `%0 = emitc.conditional %c, %a, %b : f32`.
    """

    name = "emitc.conditional"

    T: ClassVar = VarConstraint("T", EmitCTypeConstr)

    condition = operand_def(i1)
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "operands attr-dict `:` type($result)"

    def __init__(
        self,
        condition: SSAValue | Operation,
        true_value: SSAValue | Operation,
        false_value: SSAValue | Operation,
    ):
        super().__init__(
            operands=[condition, true_value, false_value],
            result_types=[SSAValue.get(true_value).type],
        )


# ---------------------------------------------------------------------------
# Structured control flow
# ---------------------------------------------------------------------------


@irdl_op_definition
class EmitC_YieldOp(IRDLOperation):
    """Terminates the body of `emitc.for` and the branches of `emitc.if`."""

    name = "emitc.yield"

    result = opt_operand_def(EmitCTypeConstr)

    traits = lazy_traits_def(
        lambda: (Pure(), IsTerminator(), HasParent(EmitC_ForOp, EmitC_IfOp))
    )

    assembly_format = "attr-dict ($result^ `:` type($result))?"

    def __init__(self):
        super().__init__(operands=[[]])

    def verify_(self) -> None:
        if self.result is not None:
            raise VerifyException("emitc.for and emitc.if yield no value")


def _ensure_yield_terminated(region: Region) -> Region:
    if not region.blocks:
        region.add_block(Block())
    block = region.block
    if block.last_op is None or not block.last_op.has_trait(IsTerminator):
        block.add_op(EmitC_YieldOp())
    return region


@irdl_op_definition
class EmitC_ForOp(IRDLOperation):
    """
    The C loop `for (T i = lb; i < ub; i += step) { body }`, where T is the type of
    the bounds and the induction variable is the body's block argument:
    `emitc.for %i = %lb to %ub step %s : i64 { ... }` (the type is omitted for index).
    """

    name = "emitc.for"

    T: ClassVar = VarConstraint(
        "T",
        base(IntegerType)
        | base(IndexType)
        | base(EmitC_SizeT)
        | base(EmitC_PtrDiffT)
        | base(EmitC_OpaqueType),
    )

    lowerBound = operand_def(T)
    upperBound = operand_def(T)
    step = operand_def(T)

    region = region_def("single_block")

    traits = traits_def(
        SingleBlockImplicitTerminator(EmitC_YieldOp), RecursiveMemoryEffect()
    )

    def __init__(
        self,
        lower_bound: SSAValue | Operation,
        upper_bound: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region,
    ):
        super().__init__(operands=[lower_bound, upper_bound, step], regions=[body])

    @property
    def induction_variable(self) -> BlockArgument:
        return self.region.block.args[0]

    def verify_(self) -> None:
        args = self.region.block.args
        if len(args) != 1 or args[0].type != self.lowerBound.type:
            raise VerifyException(
                "the body takes exactly one argument, the induction variable, "
                "of the type of the bounds"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_ForOp:
        unresolved_iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        ub = parser.parse_unresolved_operand()
        parser.parse_keyword("step")
        step = parser.parse_unresolved_operand()
        typed = parser.parse_optional_punctuation(":") is not None
        iv_type = parser.parse_type() if typed else IndexType()
        lb, ub, step = (parser.resolve_operand(v, iv_type) for v in (lb, ub, step))
        body = parser.parse_region((unresolved_iv.resolve(iv_type),))
        op = cls(lb, ub, step, body)
        extra = parser.parse_optional_attr_dict_with_keyword()
        if extra is not None:  # a DictionaryAttr
            op.attributes |= extra.data
        for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
            ensure_terminator(op, trait)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_variable)
        printer.print_string(" = ")
        printer.print_operand(self.lowerBound)
        printer.print_string(" to ")
        printer.print_operand(self.upperBound)
        printer.print_string(" step ")
        printer.print_operand(self.step)
        if not isinstance(self.lowerBound.type, IndexType):
            printer.print_string(" : ")
            printer.print_attribute(self.lowerBound.type)
        printer.print_string(" ")
        printer.print_region(
            self.region, print_entry_block_args=False, print_block_terminators=False
        )
        printer.print_op_attributes(self.attributes, print_keyword=True)


@irdl_op_definition
class EmitC_IfOp(IRDLOperation):
    """
    `if (cond) { then } else { else }`; the else region may be empty:
    `emitc.if %c { ... } else { ... }`.
    """

    name = "emitc.if"

    condition = operand_def(i1)
    thenRegion = region_def("single_block")
    elseRegion = region_def()

    traits = traits_def(
        SingleBlockImplicitTerminator(EmitC_YieldOp), RecursiveMemoryEffect()
    )

    def __init__(
        self,
        condition: SSAValue | Operation,
        then_region: Region,
        else_region: Region | None = None,
    ):
        super().__init__(
            operands=[condition],
            regions=[then_region, else_region if else_region is not None else Region()],
        )

    def verify_(self) -> None:
        if len(self.elseRegion.blocks) > 1:
            raise VerifyException("the else region has at most one block")
        for region in (self.thenRegion, self.elseRegion):
            for block in region.blocks:
                if block.args:
                    raise VerifyException("the regions of emitc.if take no arguments")

    @classmethod
    def parse(cls, parser: Parser) -> EmitC_IfOp:
        condition = parser.parse_operand()
        then_region = _ensure_yield_terminated(parser.parse_region())
        else_region = Region()
        if parser.parse_optional_keyword("else") is not None:
            else_region = _ensure_yield_terminated(parser.parse_region())
        op = cls(condition, then_region, else_region)
        extra = parser.parse_optional_attr_dict_with_keyword()
        if extra is not None:  # a DictionaryAttr
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.condition)
        printer.print_string(" ")
        printer.print_region(
            self.thenRegion, print_entry_block_args=False, print_block_terminators=False
        )
        if self.elseRegion.blocks:
            printer.print_string(" else ")
            printer.print_region(
                self.elseRegion,
                print_entry_block_args=False,
                print_block_terminators=False,
            )
        printer.print_op_attributes(self.attributes, print_keyword=True)


EmitC = Dialect(
    "emitc",
    [
        # xDSL's ops
        EmitC_AddOp,
        EmitC_ApplyOp,
        EmitC_CallOpaqueOp,
        # MLIR's ops added by byoc
        EmitC_AssignOp,
        EmitC_BitwiseAndOp,
        EmitC_BitwiseOrOp,
        EmitC_BitwiseXorOp,
        EmitC_BitwiseLeftShiftOp,
        EmitC_BitwiseRightShiftOp,
        EmitC_CallOp,
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
        EmitC_MulOp,
        EmitC_RemOp,
        EmitC_ReturnOp,
        EmitC_SubOp,
        EmitC_SubscriptOp,
        EmitC_UnaryMinusOp,
        EmitC_VariableOp,
        EmitC_VerbatimOp,
        EmitC_YieldOp,
    ],
    list(_XDSL_EMITC.attributes),
)
"""xDSL's emitc dialect (types, attributes, add, apply, call_opaque) plus byoc's ops."""
