"""Hostile text (frontend/parse.py): every case ends in one located error and
exit status 1, never a hang, a traceback or Python's own error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import byoc
from byoc.frontend import parse
from byoc.frontend.parse import nesting_error, parse_text

BIN = Path(sys.executable).parent
EXAMPLES = Path(__file__).parent.parent / "examples"
HEAD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32>"
RETURN = "  func.return %a : tensor<4xf32>\n}\n"


def with_attribute(value: str) -> str:
    return f"{HEAD} attributes {{x = {value}}} {{\n{RETURN}"


def with_constant(value: str) -> str:
    return f"{HEAD} {{\n  %c = relay.constant {value}\n{RETURN}"


CASES = {
    # An unterminated string mid-line made xDSL's lexer regex backtrack for ever.
    "unterminated string": (
        f'{HEAD} {{\n  %0 = relay.add %a, %a {{x = "abc}} : (tensor<4xf32>, tensor<4xf32>) '
        f"-> tensor<4xf32>\n{RETURN}",
        ":2:30: error: End of file reached before closing string literal",
    ),
    "unterminated long string": (
        f'{HEAD} attributes {{x = "{"a" * 5000}}} {{\n{RETURN}',
        ":1:69: error: End of file reached before closing string literal",
    ),
    "nested arrays": (with_attribute("[" * 120 + "]" * 120), ":1:132: error: nesting deeper than 64 levels"),
    "nested dictionaries": (
        with_attribute("{a = " * 100 + "1" + "}" * 100),
        ":1:384: error: nesting deeper than 64 levels",
    ),
    "nested types": (with_attribute("tuple<" * 139 + "i32" + ">" * 139), ":1:452: error: nesting deeper than 64 levels"),
    "nested modules": ("builtin.module {" * 96 + "}" * 96, ":1:1040: error: nesting deeper than 64 levels"),
    "very deep": ("[" * 200000, ":1:65: error: nesting deeper than 64 levels"),
    "f80 constant": (with_constant("dense<1.0> : tensor<4xf80>"), ":2:3: error: cannot parse this op"),
    "complex constant": (with_constant("dense<1.0> : tensor<4xcomplex<f32>>"), ":2:3: error: cannot parse this op"),
    "5000-digit integer": (with_attribute("9" * 5000), ":1:69: error: number out of range for its type (an integer literal with more than 4300 digits)"),
    "f32 overflow": (with_attribute("1.0e+308 : f32"), ":1:69: error: number out of range for its type"),
    "f64 overflow": (with_attribute("1.0e+400 : f64"), ":1:69: error: float literal out of range for f64"),
    "f16 overflow": (with_attribute("70000.0 : f16"), ":1:69: error: number out of range for its type"),
    "hex float too long": (with_attribute("0xFFFFFFFFFFFFFFFFFFFF : f32"), ":1:69: error: number out of range for its type"),
    "dense out of range": (with_constant("dense<[1.0, 2.0, 3.0, 1.0e300]> : tensor<4xf32>"), ":2:3: error: cannot parse this op"),
    "integer out of range": (with_attribute("dense<1000> : tensor<4xi8>"), ":1:1: error: cannot parse this op: Integer value 1000 is out of range"),
    "dimension of 2^63-1": (
        "func.func @main(%a: tensor<9223372036854775807xf32>) -> tensor<9223372036854775807xf32> {\n"
        "  func.return %a : tensor<9223372036854775807xf32>\n}\n",
        ":1:1: error: 'func.func': block argument 0: tensor<9223372036854775807xf32> would need at least",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_text_is_a_located_error(case):
    text, message = CASES[case]
    with pytest.raises(byoc.ByocError) as err:
        parse_text(text, "m.mlir")
    assert f"m.mlir{message}" in str(err.value)


@pytest.mark.parametrize("case", ["unterminated string", "nested arrays", "5000-digit integer", "f80 constant"])
def test_bad_text_fails_cleanly_from_byoc_opt(case, tmp_path):
    text, message = CASES[case]
    path = tmp_path / "m.mlir"
    path.write_text(text)
    proc = subprocess.run([str(BIN / "byoc-opt"), str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"{path}{message}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_nesting_within_the_limit_parses():
    text = with_attribute("[" * 60 + "]" * 60)
    assert "[[[" in str(parse_text(text))
    # Brackets in strings and comments, and `->` arrows, do not count.
    assert nesting_error('"' + "[" * 100 + '" // ' + "(" * 100 + "\n" + "-> " * 100) is None


def test_parser_stack_overflow_is_a_located_error(monkeypatch):
    monkeypatch.setattr(parse, "MAX_NESTING", 10**6)
    with pytest.raises(byoc.ByocError, match=r"m.mlir:1:\d+: error: nesting too deep for the parser"):
        parse_text(with_attribute("[" * 3000 + "]" * 3000), "m.mlir")


def test_file_names_with_braces_and_newlines_are_files(tmp_path):
    path = tmp_path / "odd{name\nwith newline}.mlir"
    path.write_text((EXAMPLES / "byoc_guide.mlir").read_text())
    model = byoc.compile(str(path), targets=[], cache=False)
    assert len(model.inputs) == 4
    proc = subprocess.run([str(BIN / "byoc-run"), str(path), "--annotate="], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
