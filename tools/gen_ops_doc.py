"""docs/ops.md, generated from the relay dialect: every op, its operands, attributes
(type, Python value, default) and what it computes (the op's docstring).

    python -m byoc.tools.gen_ops_doc            # rewrite docs/ops.md
    python -m byoc.tools.gen_ops_doc --check    # exit 1 if docs/ops.md is stale

A test runs the check, so a new op only needs a regenerate.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.irdl import (
    AllOf,
    AnyOf,
    AttrConstraint,
    BaseAttr,
    EqAttrConstraint,
    OptPropertyDef,
    ParamAttrConstraint,
    VarOperandDef,
)

from byoc.dialects import relay

OPS_MD = Path(__file__).resolve().parent.parent / "docs" / "ops.md"

HEADER = """\
# Relay ops

<!-- Generated from the relay dialect by `python -m byoc.tools.gen_ops_doc`: do not
edit by hand. A test regenerates it and fails when it differs. -->

Every relay op takes and returns static-shape tensors of one element type and
is named as in TVM Relay. These are the names a backend's `ops` map and
composites use (a name not listed here is an error, with the nearest valid
name). Attributes are properties: `{axis = 1 : i64}` in the custom form;
`op.attrs()` and the kernel view (`KernelOp.attrs`) give them as the Python
values below, defaults filled in. What each op computes, exactly, is its numpy
reference in `runtime/reference.py`.
"""


def _element(constr: AttrConstraint) -> str | None:
    """The element type an integer or array constraint pins (`i64`, `i1`)."""
    if isinstance(constr, EqAttrConstraint) and isinstance(constr.attr, IntegerType):
        return f"i{constr.attr.width.data}"
    if isinstance(constr, AllOf):
        found = [_element(c) for c in constr.attr_constrs]
        return next((f for f in found if f), None)
    return None


def attribute_type(constr: AttrConstraint) -> tuple[str, str]:
    """An attribute constraint as (MLIR type, Python type)."""
    if isinstance(constr, ParamAttrConstraint):
        elements = [_element(c) for c in constr.param_constrs]
        element = next((e for e in elements if e), "")
        if constr.base_attr is DenseArrayBase:
            return f"array<{element or '?'}>", "tuple[int, ...]"
        if constr.base_attr is IntegerAttr:
            return (element or "integer", "bool" if element == "i1" else "int")
        return constr.base_attr.name, "attribute"
    if isinstance(constr, BaseAttr):
        known = {
            FloatAttr: ("float", "float"),
            StringAttr: ("string", "str"),
            IntegerAttr: ("integer", "int"),
            DenseArrayBase: ("array", "tuple[int, ...]"),
            DenseIntOrFPElementsAttr: ("dense<...>", "numpy array (`to_numpy()`)"),
            DenseResourceAttr: ("dense_resource<...>", "numpy array (`to_numpy()`)"),
        }
        return known.get(constr.attr, (constr.attr.name, "attribute"))
    if isinstance(constr, AnyOf):
        parts = [attribute_type(c) for c in constr.attr_constrs]
        return " or ".join(p[0] for p in parts), " or ".join(dict.fromkeys(p[1] for p in parts))
    return str(constr), "attribute"


def default_text(value: object) -> str:
    """A default as Python writes it (float32 defaults at float32 precision)."""
    if isinstance(value, float):
        single = np.float32(value)
        return str(single) if float(single) == value else repr(value)
    return repr(value)


def op_section(op: type[relay.RelayOp]) -> list[str]:
    """The Markdown of one op."""
    definition = op.get_irdl_definition()
    lines = [f"### `{op.name}`", ""]
    doc = inspect.getdoc(op) or "(undocumented)"
    lines += [doc, ""]
    operands = [
        f"`{name}`" + (" (variadic)" if isinstance(d, VarOperandDef) else "")
        for name, d in definition.operands
    ]
    lines.append(f"Operands: {', '.join(operands) or 'none'}. Result: one tensor.")
    lines.append("")
    if definition.properties:
        lines += ["| attribute | type | Python value | default |", "|---|---|---|---|"]
        for name, prop in definition.properties.items():
            mlir, python = attribute_type(prop.constr)
            if prop.default_value is not None:
                default = f"`{default_text(relay.python_value(prop.default_value))}`"
            elif isinstance(prop, OptPropertyDef):
                default = "absent (`None`)"
            else:
                default = "required"
            lines.append(f"| `{name}` | `{mlir}` | {python} | {default} |")
        lines.append("")
    return lines


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring, on one line."""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def family_of(op: type) -> str:
    """The relay family module an op is defined in (`tensor`, `nn`, ...)."""
    return op.__module__.rsplit(".", 1)[-1]


def generate() -> str:
    """The text of docs/ops.md."""
    families: dict[str, list[type[relay.RelayOp]]] = {}
    for op in relay.RELAY_OPS:
        families.setdefault(family_of(op), []).append(op)
    lines = [HEADER, "## Index", "", "| op | family | what it computes |", "|---|---|---|"]
    for family, ops in families.items():
        for op in ops:
            cell = first_sentence(inspect.getdoc(op) or "").replace("|", "\\|")
            lines.append(f"| [`{op.name}`](#{op.name.replace('.', '')}) | {family} | {cell} |")
    lines.append("")
    for family, ops in families.items():
        module = sys.modules[ops[0].__module__]
        about = (inspect.getdoc(module) or "").split("\n\n")[0].replace("\n", " ")
        lines += [f"## {family} (`dialects/relay/{family}.py`)", "", about, ""]
        for op in ops:
            lines += op_section(op)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m byoc.tools.gen_ops_doc",
        description="Write docs/ops.md from the relay dialect.",
    )
    p.add_argument("-o", "--output", type=Path, default=OPS_MD, help=f"default {OPS_MD}")
    p.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from the dialect"
    )
    args = p.parse_args(argv)
    text = generate()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date with the relay dialect: run "
                "python -m byoc.tools.gen_ops_doc",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(relay.RELAY_OPS)} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
