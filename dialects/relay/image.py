"""Image ops (TVM's relay/op/image): `relay.image.resize2d`, with the
coordinate arithmetic the reference and the lowering share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from byoc.dialects.relay.base import (
    InferredOp,
    Shape,
    _check_rank,
    _error,
    _string_attr,
    float_attr,
    i64_array,
    i64_attr,
    tensor_of,
)

RESIZE_METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
ROUNDING_METHODS = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def resize2d_output_shape(
    data: Sequence[int],
    size: Sequence[int],
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    roi: Sequence[float] | None = None,
    scale: Sequence[float] | None = None,
    layout: str = "NCHW",
    op_name: str = "relay.image.resize2d",
) -> Shape:
    """NCHW `[N, C, H, W]` resized to `[N, C, size[0], size[1]]`."""
    if layout != "NCHW":
        raise _error(op_name, f'layout "{layout}" is not supported (only "NCHW")')
    _check_rank(data, 4, op_name, "data (NCHW)")
    for what, value, allowed in (
        ("method", method, RESIZE_METHODS),
        ("coordinate_transformation_mode", coordinate_transformation_mode, COORDINATE_MODES),
        ("rounding_method", rounding_method, ROUNDING_METHODS),
    ):
        if value not in allowed:
            raise _error(
                op_name,
                f'{what} "{value}" is not one of '
                + ", ".join(f'"{v}"' for v in allowed),
            )
    if len(size) != 2 or any(s < 1 for s in size):
        raise _error(op_name, f"size must be two positive values, got {list(size)}")
    if data[2] < 1 or data[3] < 1:
        raise _error(op_name, f"cannot resize an empty image {list(data)}")
    if scale is not None and (len(scale) != 2 or any(not s > 0 for s in scale)):
        raise _error(op_name, f"scale must be two positive values, got {list(scale)}")
    if coordinate_transformation_mode == "tf_crop_and_resize":
        if roi is None or len(roi) != 4:
            raise _error(
                op_name,
                "tf_crop_and_resize needs roi = [start_h, start_w, end_h, end_w], got "
                f"{None if roi is None else list(roi)}",
            )
    return (data[0], data[1], size[0], size[1])


def rounding_of(method: str, mode: str, rounding_method: str) -> str:
    """The rounding a nearest-neighbour resize uses: `rounding_method`, or
    TVM's default ("round" with align_corners, else "floor")."""
    if rounding_method:
        return rounding_method
    return "round" if mode == "align_corners" else "floor"


def source_coordinates(
    in_size: int,
    out_size: int,
    scale: float,
    mode: str,
    roi: tuple[float, float] = (0.0, 1.0),
    length: float | None = None,
) -> np.ndarray:
    """The input coordinate (float64) each output index maps to along one axis,
    in the order of operations the lowering uses. `scale` is output/input;
    `length` the output length the modes that use it see (ONNX's `scale *
    input`, which a fractional scale makes differ from `out_size`; by default
    `out_size`)."""
    x = np.arange(out_size, dtype=np.float64)
    length = float(out_size) if length is None else length
    if mode == "align_corners":
        if length == 1:
            return np.zeros(out_size)
        return x * float(in_size - 1) / (length - 1)
    if mode == "asymmetric":
        return x / scale
    if mode == "pytorch_half_pixel":
        if length == 1:
            return np.full(out_size, -0.5)
        return (x + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            return np.full(
                out_size, (end - start) * float(in_size - 1) / 2.0 + start * float(in_size - 1)
            )
        return x * ((end - start) * float(in_size - 1)) / (length - 1) + start * float(
            in_size - 1
        )
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / length)
        return offset + ((x + 0.5) / scale - 0.5)
    return (x + 0.5) / scale - 0.5  # half_pixel


def axis_geometry(
    in_size: int, out_size: int, scale: float | None
) -> tuple[float, float]:
    """`(scale, length)` of one axis: the given scale (else out/in) and the
    output length the coordinate modes see (`scale * in`, else `out_size`)."""
    if scale is None:
        return out_size / in_size, float(out_size)
    return float(scale), float(scale) * in_size


def cubic_weights(t: np.ndarray, alpha: float) -> np.ndarray:
    """The four cubic-convolution weights of taps -1, 0, 1, 2 at fraction `t`."""
    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((alpha + 2) * d - (alpha + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((alpha * d - 5 * alpha) * d + 8 * alpha) * d - 4 * alpha

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


@irdl_op_definition
class Resize2dOp(InferredOp):
    """NCHW `data` resized to `size` (TVM's `relay.image.resize2d`, ONNX's
    Resize and Upsample), by `method` "nearest_neighbor", "linear" or "cubic".

    Each output index `x` maps to the input coordinate that
    `coordinate_transformation_mode` gives ("half_pixel": `(x + 0.5) / s -
    0.5`, "pytorch_half_pixel" (the same, but -0.5 for a size-1 output),
    "align_corners": `x * (in - 1) / (out - 1)`, "asymmetric": `x / s`,
    "tf_half_pixel_for_nn": `(x + 0.5) / s`, "tf_crop_and_resize": inside
    `roi` = [start_h, start_w, end_h, end_w], in fractions of the image, with
    `extrapolation_value` outside it; "half_pixel_symmetric", ONNX's
    half_pixel centred on the image), where `s` is `scale` ([h, w]; byoc's
    addition for ONNX's scales: by default size / input size; with it the
    modes that divide by the output length use `s * in`, as ONNX does). Nearest rounds the
    coordinate by `rounding_method` ("round_prefer_floor", "round_prefer_ceil",
    "round" (half away from zero), "floor", "ceil"; "" is TVM's default:
    "round" with align_corners, else "floor"); linear and cubic interpolate
    (cubic with `cubic_alpha`, and `cubic_exclude` renormalising the taps
    inside the image). Indices outside the image read its edge."""

    name = "relay.image.resize2d"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    size = prop_def(DenseArrayBase.constr(i64))
    roi = opt_prop_def(DenseArrayBase.constr(f64))
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    method = prop_def(StringAttr, default_value=StringAttr("linear"))
    coordinate_transformation_mode = prop_def(
        StringAttr, default_value=StringAttr("half_pixel")
    )
    rounding_method = prop_def(StringAttr, default_value=StringAttr(""))
    cubic_alpha = prop_def(FloatAttr, default_value=FloatAttr(-0.5, f64))
    cubic_exclude = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))
    extrapolation_value = prop_def(FloatAttr, default_value=FloatAttr(0.0, f64))
    scale = opt_prop_def(DenseArrayBase.constr(f64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        size: Sequence[int],
        method: str = "linear",
        coordinate_transformation_mode: str = "half_pixel",
        rounding_method: str = "",
        roi: Sequence[float] | None = None,
        cubic_alpha: float = -0.5,
        cubic_exclude: int = 0,
        extrapolation_value: float = 0.0,
        scale: Sequence[float] | None = None,
        layout: str = "NCHW",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "size": i64_array(size),
                "roi": None if roi is None else DenseArrayBase.from_list(f64, [float(v) for v in roi]),
                "layout": _string_attr(layout),
                "method": _string_attr(method),
                "coordinate_transformation_mode": _string_attr(coordinate_transformation_mode),
                "rounding_method": _string_attr(rounding_method),
                "cubic_alpha": float_attr(cubic_alpha, f64),
                "cubic_exclude": i64_attr(cubic_exclude),
                "extrapolation_value": float_attr(extrapolation_value, f64),
                "scale": None
                if scale is None
                else DenseArrayBase.from_list(f64, [float(v) for v in scale]),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = tensor_of(operand_types[0], cls.name, "data")
        shape = resize2d_output_shape(
            data.get_shape(),
            attrs["size"],
            attrs["method"],
            attrs["coordinate_transformation_mode"],
            attrs["rounding_method"],
            attrs["roi"],
            attrs["scale"],
            attrs["layout"],
            cls.name,
        )
        return TensorType(data.element_type, shape)

    def axis_coordinates(self, axis: int) -> np.ndarray:
        """The input coordinates of the output indices along axis 2 or 3."""
        attrs = self.attrs()
        typ = self.data.type
        assert isinstance(typ, TensorType)
        in_size = typ.get_shape()[axis]
        out_size = attrs["size"][axis - 2]  # type: ignore[index]
        given = attrs["scale"][axis - 2] if attrs["scale"] else None  # type: ignore[index]
        scale, length = axis_geometry(in_size, out_size, given)
        roi = attrs["roi"]
        window = (0.0, 1.0) if roi is None else (roi[axis - 2], roi[axis])  # type: ignore[index]
        return source_coordinates(
            in_size, out_size, scale, attrs["coordinate_transformation_mode"], window, length  # type: ignore[arg-type]
        )
