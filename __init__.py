"""byoc: a bring-your-own-codegen compiler for tensor programs, on xDSL.

    import byoc
    model = byoc.compile("model.mlir", targets=["ccompiler"])
    y = model(a, b)
"""

from byoc.frontend.diagnostics import ByocError
from byoc.frontend.onnx import from_onnx
from byoc.runtime.build import compile
from byoc.runtime.compiled import CompiledModule
from byoc.runtime.reference import run_reference
from byoc.runtime.saved import load
from byoc.runtime.threads import set_threads, threads

__all__ = ["ByocError", "CompiledModule", "compile", "from_onnx", "load", "run_reference", "set_threads", "threads"]
__version__ = "0.1.0"
