"""The converter registry: ONNX op type (default domain) -> its converter, one
table per operator family merged here, so adding an operator touches only its
family's file."""

from __future__ import annotations

from collections.abc import Mapping

from byoc.frontend.onnx import attention, einsum, elementwise, loss, nn, quantized, reduce, shape
from byoc.frontend.onnx.graph import Converter


def _merge(*tables: Mapping[str, Converter]) -> dict[str, Converter]:
    merged: dict[str, Converter] = {}
    for table in tables:
        twice = merged.keys() & table.keys()
        assert not twice, f"ONNX ops converted twice: {sorted(twice)}"
        merged.update(table)
    return merged


CONVERTERS: dict[str, Converter] = _merge(
    attention.CONVERTERS,
    elementwise.CONVERTERS,
    einsum.CONVERTERS,
    nn.CONVERTERS,
    loss.CONVERTERS,
    reduce.CONVERTERS,
    shape.CONVERTERS,
    quantized.CONVERTERS,
)
"""ONNX op type (default domain) -> its converter."""

SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(CONVERTERS))
"""The ONNX operators `from_onnx` imports."""
