"""Hypothesis strategies that mutate seeds: `.mlir` text, ONNX models, saved files.

Each strategy draws `Mutant`s: a description of the edits (to reproduce
them), the bytes of the input file and the targets to compile it for. The
edits are those that found the bugs of issue 13: tokens swapped for others
of the corpus or for edge values (huge and negative numbers, odd element
types, unbalanced brackets, unterminated strings), values rewired to later
or foreign ones, attributes and dims changed, nodes dropped or duplicated,
names a C file or xDSL would choke on, bytes flipped, members truncated.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass

from hypothesis import strategies as st

TARGETS = st.sampled_from([[], [], [], ["ccompiler"], ["ccompiler"], ["cblas", "ccompiler"], ["onnxruntime"]])


@dataclass
class Mutant:
    description: str
    data: bytes
    targets: list[str]


# --- .mlir text --------------------------------------------------------------

TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|[%@^#!][\w.$-]+|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[A-Za-z_][\w.$]*|->|\S'
)

EDGE_NUMBERS = [
    "0", "1", "-1", "2", "3", "7", "-2", "65536", "2147483647", "2147483648", "-2147483649",
    "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "4611686018427387904", "1099511627776", "1" + "0" * 400, "1.0e+308", "1.0e-320", "-0.0",
    "0x7FC00000", "0xFFFFFFFF", "3.4028236e+38", "1e39", "0.5", "nan", "inf",
]
EDGE_TYPES = [
    "f32", "f64", "f16", "bf16", "f80", "f128", "i1", "i8", "i32", "i64", "ui8", "si8", "index",
    "complex<f32>", "none", "tensor<f32>", "tensor<?xf32>", "tensor<0xf32>", "tensor<*xf32>",
    "memref<4xf32>", "vector<4xf32>", "tuple<>", "!llvm.ptr", "tensor<4x4xf32>",
    "tensor<1099511627776xf32>", "tensor<4611686018427387904x2xf32>",
]
EDGE_TOKENS = [
    '"', "{", "}", "(", ")", "<", ">", "[", "]", ":", ",", "=", "->", "%0", "%1", "%arg0", "%a",
    "@main", "@f", "^bb0", "^bb1", "#", "!", "?", "x", "dense<1.0>", "dense<[1, 2]>",
    'dense<"0x0000">', "func.return", "func.call", "extern.call", "relay.add", "unit", "true",
    '"\\"', '"\u00e9\u4e2d"', "\u0000", "//", "/*", "\\", "...", "loc(unknown)", "{}", "[]",
    "array<i64: 1, 2>", "array<i64>", "#extern.compiler<\"ccompiler\">", "0x", "1e", "--", "<<",
]


TENSOR = re.compile(r"tensor<((?:\d+x)*)(\w+)>")
EDGE_DIMS = [0, 1, 2, 3, 5, 17, 64, 1000, 2**31, 2**40, 2**62, 2**63 - 1]
ELEMENT_TYPES = ["f32", "f32", "f64", "f16", "bf16", "i8", "ui8", "i32", "i64", "i1", "index", "complex<f32>"]

MLIR_EDITS = (
    ["retype-all"] * 4 + ["retype-one"] * 2 + ["number"] * 4 + ["type"] * 3 + ["ssa"] * 3 + ["opname"] * 3 + ["token"] * 2
    + ["edge", "delete", "duplicate", "swap-lines", "drop-line", "dup-line", "junk", "truncate", "nest"]
)


@st.composite
def mlir_mutants(draw: st.DrawFn, seeds: list[tuple[str, str]]) -> Mutant:
    name, text = draw(st.sampled_from(seeds))
    corpus_tokens = sorted({t for _, s in seeds for t in TOKEN.findall(s)})
    edits = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 2, 4]))):
        tokens = list(TOKEN.finditer(text))
        lines = text.split("\n")
        # Mostly edits that keep the text parsable, so that the verifier,
        # the passes, the backends and the compiled code all get their share.
        kind = draw(st.sampled_from(MLIR_EDITS))
        if not tokens:
            kind = "junk"
        types = sorted({t.group() for t in TENSOR.finditer(text)})
        if kind.startswith("retype"):
            if not types:
                kind = "junk"
            else:
                old = draw(st.sampled_from(types))
                match = TENSOR.fullmatch(old)
                assert match is not None
                dims = [int(d) for d in match.group(1).split("x") if d]
                element = match.group(2)
                change = draw(st.sampled_from(["dim", "dim", "drop", "add", "element"]))
                if change == "dim" and dims:
                    dims[draw(st.integers(0, len(dims) - 1))] = draw(st.sampled_from(EDGE_DIMS))
                elif change == "drop" and dims:
                    del dims[draw(st.integers(0, len(dims) - 1))]
                elif change == "element":
                    element = draw(st.sampled_from(ELEMENT_TYPES))
                else:
                    dims.insert(draw(st.integers(0, len(dims))), draw(st.sampled_from([1, 2, 3])))
                new = "tensor<" + "".join(f"{d}x" for d in dims) + element + ">"
                if kind == "retype-all":
                    text = text.replace(old, new)
                else:
                    places = [m for m in TENSOR.finditer(text) if m.group() == old]
                    m = places[draw(st.integers(0, len(places) - 1))]
                    text = text[: m.start()] + new + text[m.end() :]
                edits.append(f"{kind} {old} -> {new}")
                continue
        if kind in ("token", "number", "type", "ssa", "edge", "delete", "duplicate", "opname"):
            i = draw(st.integers(0, len(tokens) - 1))
            m = tokens[i]
            old = m.group()
            if kind == "token":
                new = draw(st.sampled_from(corpus_tokens))
            elif kind == "number":
                numbers = [t for t in tokens if re.fullmatch(r"-?\d.*", t.group())]
                if numbers:
                    m = numbers[draw(st.integers(0, len(numbers) - 1))]
                    old = m.group()
                new = draw(st.sampled_from(EDGE_NUMBERS))
            elif kind == "type":
                types = [t for t in tokens if re.fullmatch(r"[fi]\d+|bf16|index", t.group())]
                if types:
                    m = types[draw(st.integers(0, len(types) - 1))]
                    old = m.group()
                new = draw(st.sampled_from(EDGE_TYPES))
            elif kind == "ssa":
                values = [t for t in tokens if t.group().startswith("%")]
                if values:
                    m = values[draw(st.integers(0, len(values) - 1))]
                    old = m.group()
                    new = draw(st.sampled_from(sorted({v.group() for v in values} | {"%999"})))
                else:
                    new = "%0"
            elif kind == "edge":
                new = draw(st.sampled_from(EDGE_TOKENS))
            elif kind == "delete":
                new = ""
            elif kind == "duplicate":
                new = old + " " + old
            else:
                ops = [t for t in corpus_tokens if re.fullmatch(r"(relay|qnn|extern)\.[\w.]+", t)]
                new = draw(st.sampled_from(ops or ["relay.add"]))
            text = text[: m.start()] + new + text[m.end() :]
            edits.append(f"{kind} {old[:40]!r}@{m.start()} -> {new[:40]!r}")
        elif kind in ("swap-lines", "drop-line", "dup-line"):
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if kind == "swap-lines":
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == "drop-line":
                del lines[i]
            else:
                lines.insert(j, lines[i])
            text = "\n".join(lines)
            edits.append(f"{kind} {i} {j}")
        elif kind == "nest":
            depth = draw(st.sampled_from([2, 50, 120, 400, 5000]))
            opener, closer = draw(st.sampled_from([("{", "}"), ("(", ")"), ("<", ">"), ("[", "]"), ("tensor<", ">")]))
            at = draw(st.integers(0, len(text)))
            text = text[:at] + opener * depth + closer * draw(st.sampled_from([0, depth])) + text[at:]
            edits.append(f"nest {opener}x{depth} at {at}")
        elif kind == "junk":
            at = draw(st.integers(0, len(text)))
            junk = draw(st.text(min_size=1, max_size=8))
            text = text[:at] + junk + text[at:]
            edits.append(f"junk {junk!r} at {at}")
        else:
            at = draw(st.integers(0, len(text)))
            text = text[:at]
            edits.append(f"truncate at {at}")
    data = text.encode("utf-8", "surrogatepass")
    return Mutant(f"{name}: {'; '.join(edits)}", data, draw(TARGETS))


# --- ONNX models ---------------------------------------------------------------

EDGE_INTS = [0, 1, -1, 2, 3, -2, 7, 255, 2**31, -(2**31), 2**40, 2**62, 2**63 - 1, -(2**63)]
EDGE_FLOATS = [0.0, -1.0, 1e-30, 1e30, float("nan"), float("inf"), -float("inf"), 0.5, 3.0]
ATTRIBUTE_NAMES = [
    "axis", "axes", "keepdims", "perm", "kernel_shape", "strides", "pads", "dilations", "group",
    "alpha", "beta", "gamma", "transA", "transB", "epsilon", "auto_pad", "ceil_mode",
    "count_include_pad", "to", "mode", "value", "min", "max", "noop_with_empty_axes", "shape",
    "allowzero", "split", "storage_order", "momentum", "spatial", "unknown_attribute",
]
OP_TYPES = [
    "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs",
    "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul", "Softmax",
    "Reshape", "Transpose", "Flatten", "Concat", "ReduceMean", "ReduceSum", "Clip",
    "BatchNormalization", "Identity", "Squeeze", "Unsqueeze", "Pad", "Det", "Cast", "Gather",
    "LeakyRelu", "PRelu", "Erf", "Pow", "Max", "Min", "Where", "Split", "Slice", "NoSuchOp",
]
WEIRD_NAMES = ["_5", "{2", "}1", " 4", "a\nb", "", "%0", "x" * 300, "\u00e9\u4e2d", "main", "a b", "0", "@f", "../x", "int"]


def _values(graph) -> list[str]:  # noqa: ANN001
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    for node in graph.node:
        names += list(node.output)
    return names


@st.composite
def onnx_mutants(draw: st.DrawFn, seeds: list[tuple[str, bytes]]) -> Mutant:
    import onnx
    from onnx import AttributeProto, TensorProto, helper

    name, raw = draw(st.sampled_from(seeds))
    model = onnx.ModelProto()
    model.ParseFromString(raw)
    graph = model.graph
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["attr-value", "attr-value", "attr-add", "attr-drop", "rewire", "rewire",
                 "node-drop", "node-dup", "node-swap", "op-type", "dims", "elem-type",
                 "init-dims", "init-type", "init-data", "opset", "output", "rename", "domain"]
            )
        )
        nodes = graph.node
        if kind.startswith(("attr", "rewire", "node", "op-type", "domain")) and not nodes:
            kind = "dims"
        if kind.startswith("init") and not graph.initializer:
            kind = "elem-type"
        if kind == "attr-value":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            if not node.attribute:
                kind = "attr-add"
            else:
                attr = node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
                if attr.type == AttributeProto.INT:
                    attr.i = draw(st.sampled_from(EDGE_INTS))
                elif attr.type == AttributeProto.INTS and draw(st.booleans()):
                    values = list(attr.ints)
                    if values and draw(st.booleans()):
                        values[draw(st.integers(0, len(values) - 1))] = draw(st.sampled_from(EDGE_INTS))
                    elif values and draw(st.booleans()):
                        values.pop()
                    else:
                        values.append(draw(st.sampled_from(EDGE_INTS)))
                    del attr.ints[:]
                    attr.ints.extend(values)
                elif attr.type == AttributeProto.FLOAT:
                    attr.f = draw(st.sampled_from(EDGE_FLOATS))
                elif attr.type == AttributeProto.STRING:
                    attr.s = draw(st.sampled_from([b"", b"SAME_UPPER", b"SAME_LOWER", b"VALID", b"NOTSET", b"x\x00y"]))
                else:
                    # Another type under the same name: float strides, int axes lists...
                    replacement = helper.make_attribute(attr.name, draw(st.sampled_from([1.5, [1.0, 2.0], "s", 3, [2, 2]])))
                    attr.CopyFrom(replacement)
                edits.append(f"attr-value {node.op_type}.{attr.name}")
                continue
        if kind == "attr-add":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            attr_name = draw(st.sampled_from(ATTRIBUTE_NAMES))
            value = draw(st.sampled_from([0, 1, -1, 2, 2**40, 1.5, [1, 1], [0, 1, 2, 3], [2**40], "SAME_UPPER", [0.5]]))
            node.attribute.append(helper.make_attribute(attr_name, value))
            edits.append(f"attr-add {node.op_type}.{attr_name}={value!r}")
        elif kind == "attr-drop":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            if node.attribute:
                del node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
            edits.append(f"attr-drop {node.op_type}")
        elif kind == "rewire":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            values = _values(graph) + ["", "nowhere"]
            new = draw(st.sampled_from(values))
            if node.input and draw(st.integers(0, 4)):
                i = draw(st.integers(0, len(node.input) - 1))
                node.input[i] = new
            elif node.input and draw(st.booleans()):
                del node.input[-1]
            else:
                node.input.append(new)
            edits.append(f"rewire {node.op_type} <- {new!r}")
        elif kind == "node-drop":
            i = draw(st.integers(0, len(nodes) - 1))
            edits.append(f"node-drop {nodes[i].op_type}")
            del nodes[i]
        elif kind == "node-dup":
            i = draw(st.integers(0, len(nodes) - 1))
            nodes.insert(draw(st.integers(0, len(nodes))), nodes[i])
            edits.append(f"node-dup {nodes[i].op_type}")
        elif kind == "node-swap":
            i, j = draw(st.integers(0, len(nodes) - 1)), draw(st.integers(0, len(nodes) - 1))
            a, b = onnx.NodeProto(), onnx.NodeProto()
            a.CopyFrom(nodes[i])
            b.CopyFrom(nodes[j])
            nodes[i].CopyFrom(b)
            nodes[j].CopyFrom(a)
            edits.append(f"node-swap {i} {j}")
        elif kind == "op-type":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            old = node.op_type
            node.op_type = draw(st.sampled_from(OP_TYPES))
            edits.append(f"op-type {old} -> {node.op_type}")
        elif kind == "domain":
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            node.domain = draw(st.sampled_from(["", "ai.onnx", "com.microsoft", "ai.onnx.ml", "x"]))
            edits.append(f"domain {node.op_type} {node.domain!r}")
        elif kind in ("dims", "elem-type", "output"):
            values = list(graph.input) + list(graph.output)
            if not values:
                continue
            value = values[draw(st.integers(0, len(values) - 1))]
            tensor_type = value.type.tensor_type
            if kind == "dims":
                dims = tensor_type.shape.dim
                choice = draw(st.integers(0, 3))
                if dims and choice < 2:
                    dim = dims[draw(st.integers(0, len(dims) - 1))]
                    if choice == 0:
                        dim.dim_value = draw(st.sampled_from([0, 1, 2, 5, 64, 2**31, 2**40, 2**62]))
                    else:
                        dim.dim_param = "N"
                elif choice == 2 and dims:
                    del dims[-1]
                else:
                    tensor_type.shape.dim.add().dim_value = draw(st.sampled_from([1, 2, 3]))
                edits.append(f"dims {value.name!r}")
            elif kind == "elem-type":
                tensor_type.elem_type = draw(
                    st.sampled_from([TensorProto.DOUBLE, TensorProto.INT64, TensorProto.FLOAT16,
                                     TensorProto.UINT8, TensorProto.BOOL, TensorProto.STRING,
                                     TensorProto.INT8, TensorProto.BFLOAT16, 0, 99])
                )
                edits.append(f"elem-type {value.name!r} {tensor_type.elem_type}")
            else:
                choice = draw(st.integers(0, 2))
                if choice == 0 and len(graph.output) > 1:
                    del graph.output[-1]
                elif choice == 1:
                    internal = draw(st.sampled_from(_values(graph) + ["nowhere"]))
                    graph.output.append(helper.make_tensor_value_info(internal, TensorProto.FLOAT, None))
                else:
                    del graph.output[:]
                edits.append(f"output {choice}")
        elif kind.startswith("init"):
            init = graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
            if kind == "init-dims":
                if init.dims and draw(st.booleans()):
                    init.dims[draw(st.integers(0, len(init.dims) - 1))] = draw(st.sampled_from([0, 1, 2, 3, 2**40, -1]))
                else:
                    init.dims.append(draw(st.sampled_from([1, 2])))
            elif kind == "init-type":
                init.data_type = draw(st.sampled_from([TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8, TensorProto.FLOAT16, 0, 99]))
            else:
                choice = draw(st.integers(0, 2))
                if init.raw_data and choice == 0:
                    init.raw_data = init.raw_data[: len(init.raw_data) // 2]
                elif init.raw_data and choice == 1:
                    data = bytearray(init.raw_data)
                    at = draw(st.integers(0, max(len(data) - 4, 0)))
                    data[at : at + 4] = draw(st.sampled_from([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\xff\xff\x7f\x7f"]))
                    init.raw_data = bytes(data)
                else:
                    del init.float_data[:]
                    init.ClearField("raw_data")
            edits.append(f"{kind} {init.name!r}")
        elif kind == "opset":
            if model.opset_import:
                model.opset_import[0].version = draw(st.sampled_from([1, 5, 6, 7, 9, 10, 11, 12, 13, 17, 18, 21, 22, 100]))
            edits.append(f"opset {model.opset_import[0].version if model.opset_import else None}")
        elif kind == "rename":
            values = _values(graph)
            if not values:
                continue
            old = draw(st.sampled_from(values))
            new = draw(st.sampled_from(WEIRD_NAMES))
            for v in list(graph.input) + list(graph.output) + list(graph.initializer):
                if v.name == old:
                    v.name = new
            for node in graph.node:
                for i, n in enumerate(node.input):
                    if n == old:
                        node.input[i] = new
                for i, n in enumerate(node.output):
                    if n == old:
                        node.output[i] = new
            edits.append(f"rename {old!r} -> {new!r}")
    data = model.SerializeToString()
    if draw(st.integers(0, 9)) == 0 and data:
        at = draw(st.integers(0, len(data) - 1))
        flipped = bytearray(data)
        flipped[at] ^= draw(st.integers(1, 255))
        data = bytes(flipped)
        edits.append(f"byte {at} flipped")
    return Mutant(f"{name}: {'; '.join(edits)}", data, draw(TARGETS))


# --- saved files -------------------------------------------------------------


@st.composite
def saved_mutants(draw: st.DrawFn, seeds: list[tuple[str, bytes]]) -> Mutant:
    """Damage of every kind the integrity checks answer: bytes changed (one
    or a run), members truncated or zeroed with the checksums as they were,
    the file cut, and doctored files (tests/fuzz/saved_files.py) resealed."""
    from .saved_files import DOCTORINGS, byte_flips, read_members, write_sealed

    name, data = draw(st.sampled_from(seeds))
    kind = draw(st.sampled_from(["flip", "flip", "flip", "run", "cut", "member", "doctor", "doctor2"]))
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        xor = draw(st.integers(1, 255))
        description, mutant = next(byte_flips(data, [at], xor))
    elif kind == "run":
        at = draw(st.integers(0, len(data) - 1))
        length = draw(st.integers(1, 4096))
        fill = draw(st.sampled_from([b"\x00", b"\xff", b"A"]))
        mutant = data[:at] + fill * min(length, len(data) - at) + data[at + length :]
        description = f"bytes {at}..{at + length} set to {fill!r}"
    elif kind == "cut":
        at = draw(st.integers(0, len(data) - 1))
        mutant = data[:at]
        description = f"file cut to {at} bytes"
    elif kind == "member":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            contents = {i.filename: zf.read(i) for i in infos}
            comment = zf.comment
        victim = draw(st.sampled_from(sorted(contents)))
        body = contents[victim]
        length = draw(st.integers(0, max(len(body) - 1, 0)))
        zero = draw(st.booleans())
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for info in infos:
                content = contents[info.filename]
                if info.filename == victim:
                    content = content[:length] + (bytes(len(content) - length) if zero else b"")
                zf.writestr(info, content)
            zf.comment = comment
        mutant = out.getvalue()
        description = f"{victim} {'zeroed' if zero else 'cut'} from {length} of {len(body)}"
    else:
        manifest, members = read_members(data)
        edits = draw(st.lists(st.sampled_from(sorted(DOCTORINGS)), min_size=1, max_size=2 if kind == "doctor2" else 1))
        for edit in edits:
            try:
                DOCTORINGS[edit](manifest, members)
            except (IndexError, KeyError, TypeError, AttributeError):
                pass
        if draw(st.booleans()):
            # Also a member changed and its checksum recomputed: only the
            # signature can refuse it. Not the code (host.o's or a library's
            # instructions): changed and resealed, that is another model, as
            # trusted as any shared library (docs/architecture.md).
            victim = draw(st.sampled_from(sorted(n for n in members if n.endswith(".mlir") or n.startswith("src/"))))
            body = bytearray(members[victim])
            if body:
                at = draw(st.integers(0, len(body) - 1))
                body[at] ^= draw(st.integers(1, 255))
                members[victim] = bytes(body)
                edits.append(f"{victim} byte {at} changed, rehashed")
        mutant = write_sealed(manifest, members)
        description = "doctored: " + ", ".join(edits)
    return Mutant(f"{name}: {description}", mutant, [])


def json_dumps(value: object) -> str:
    return json.dumps(value, default=str)
