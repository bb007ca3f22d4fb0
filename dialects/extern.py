"""The extern dialect: regions of a graph handed to an external backend.

After annotation, an op that a backend takes carries the discardable attribute
`extern.target = "<backend>"`. Merging groups such ops into `extern.region`s;
partitioning outlines each region into
`func.func private @<backend>_<n> attributes {extern.compiler = "<backend>"}`
called from the host with `extern.call`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException

TARGET_ATTR = "extern.target"
"""Discardable attribute naming the backend an annotated op goes to."""

COMPILER_ATTR = "extern.compiler"
"""Attribute naming the backend of an outlined function."""

INLINE_ATTR = "extern.inline"
"""On a relay.constant: the backends that copy it into their functions."""

COMPOSITE_ATTR = "extern.composite"
"""Attribute naming the composite pattern an op belongs to (e.g. `ccompiler.conv2d_bias_relu`)."""


def _types(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the values of an `extern.region` to its users."""

    name = "extern.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RegionOp)))

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class RegionOp(IRDLOperation):
    """A group of ops assigned to one backend, isolated from the surrounding graph.

    The operands are the values the group reads; they become the arguments of
    the single block. `extern.yield` returns the values used outside the group.
    """

    name = "extern.region"

    compiler = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")

    traits = traits_def(
        IsolatedFromAbove(), SingleBlockImplicitTerminator(YieldOp)
    )

    assembly_format = (
        "$compiler `(` $inputs `)` attr-dict `:` "
        "functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        compiler: str | StringAttr,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region | Block,
    ):
        if isinstance(compiler, str):
            compiler = StringAttr(compiler)
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"compiler": compiler},
            regions=[body],
        )

    def verify_(self) -> None:
        block = self.body.block
        arg_types = tuple(a.type for a in block.args)
        in_types = tuple(v.type for v in self.inputs)
        if arg_types != in_types:
            raise VerifyException(
                f"'extern.region': block argument types {_types(arg_types)} do not "
                f"match operand types {_types(in_types)}"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("'extern.region': body must end in extern.yield")
        yielded = tuple(v.type for v in last.values)
        out_types = tuple(r.type for r in self.outputs)
        if yielded != out_types:
            raise VerifyException(
                f"'extern.region': yielded types {_types(yielded)} do not match "
                f"result types {_types(out_types)}"
            )


@irdl_op_definition
class CallOp(IRDLOperation):
    """Calls an outlined external function from the host graph."""

    name = "extern.call"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    res = var_result_def()

    assembly_format = (
        "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"
    )

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(
            operands=[args],
            result_types=[result_types],
            properties={"callee": callee},
        )


Extern = Dialect("extern", [RegionOp, YieldOp, CallOp], [])
