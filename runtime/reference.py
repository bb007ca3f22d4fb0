"""The reference interpreter: what every relay op means, in numpy.

Every backend and the host are tested against it. It runs the graph level
(relay ops, extern.region, extern.call, func.call) one op at a time, with
no compilation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from byoc.dialects import relay
from byoc.dialects.extern import CallOp, RegionOp, YieldOp
from byoc.frontend.diagnostics import ByocError

Kernel = Callable[[Operation, list[np.ndarray]], np.ndarray]

_NUMPY_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a builtin element type."""
    dtype = _NUMPY_DTYPES.get(str(element_type))
    if dtype is None:
        raise ByocError(f"error: element type {element_type} is not supported")
    return np.dtype(dtype)


def _elementwise(fn: Callable[..., np.ndarray]) -> Kernel:
    return lambda op, args: fn(*args)


REFERENCE: dict[str, Kernel] = {
    relay.AddOp.name: _elementwise(np.add),
    relay.SubtractOp.name: _elementwise(np.subtract),
    relay.MultiplyOp.name: _elementwise(np.multiply),
    relay.DivideOp.name: _elementwise(np.divide),
    relay.ReluOp.name: _elementwise(lambda x: np.maximum(x, x.dtype.type(0))),
    relay.TanhOp.name: _elementwise(np.tanh),
    relay.ExpOp.name: _elementwise(np.exp),
    relay.NegativeOp.name: _elementwise(np.negative),
}
"""numpy meaning of each relay op, by op name."""


class ReferenceInterpreter:
    """Runs functions of a relay module on numpy arrays."""

    def __init__(self, module: ModuleOp):
        self.functions = {
            op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)
        }

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run function `name` on `args`; returns its results."""
        function = self.functions.get(name)
        if function is None or not function.body.blocks:
            raise ByocError(f"error: no function @{name} with a body to run")
        return self.run_block(function.body.block, args)

    def run_block(self, block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run the ops of `block` with its arguments bound to `args`."""
        env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args))
        with np.errstate(all="ignore"):  # IEEE results, as compiled code gives
            for op in block.ops:
                inputs = [env[v] for v in op.operands]
                if isinstance(op, (func.ReturnOp, YieldOp)):
                    return inputs
                if isinstance(op, RegionOp):
                    outputs = self.run_block(op.body.block, inputs)
                elif isinstance(op, CallOp):
                    outputs = self.call(op.callee.root_reference.data, inputs)
                elif isinstance(op, func.CallOp):
                    outputs = self.call(op.callee.root_reference.data, inputs)
                else:
                    kernel = REFERENCE.get(op.name)
                    if kernel is None:
                        raise ByocError(
                            f"error: the reference interpreter has no meaning for "
                            f"'{op.name}'"
                        )
                    outputs = [kernel(op, inputs)]
                for result, value in zip(op.results, outputs, strict=True):
                    env[result] = _as_type(value, result.type)
        raise ByocError("error: block has no terminator")


def _as_type(value: np.ndarray, typ: Attribute) -> np.ndarray:
    """`value` with the dtype and shape of tensor type `typ`."""
    if isinstance(typ, TensorType):
        array = np.asarray(value, dtype=numpy_dtype(typ.element_type))
        return array.reshape(tuple(typ.get_shape()))
    return np.asarray(value)


def run_reference(
    module: ModuleOp, args: Sequence[np.ndarray], entry: str = "main"
) -> list[np.ndarray]:
    """Results of `entry` on `args`, computed with numpy."""
    return ReferenceInterpreter(module).call(entry, args)
