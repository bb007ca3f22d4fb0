"""A short, deterministic slice of the fuzzing harness (tests/fuzz/).

Each kind of input, mutated by a fixed seed, must end in clean errors and
successes only: no traceback, crash, hang, unlocated error or wrong answer.
`python -m tests.fuzz --minutes 10` runs the long version by hand.
"""

from __future__ import annotations

import pytest

from fuzz.runner import fuzz

CASES = 16


@pytest.mark.parametrize("kind", ["mlir", "onnx", "saved"])
def test_fuzz_slice(kind, tmp_path):
    tally = fuzz(kind, tmp_path / kind, cases=CASES, seed=13, findings=tmp_path / "findings", case_seconds=300)
    assert sum(tally.counts.values()) == CASES
    assert tally.bad == 0, "\n".join(tally.findings)


FOUND = {
    # @main taking a memref: the message did not say where (python -m tests.fuzz).
    "memref input": (
        "func.func @main(%a: memref<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  func.return %b : tensor<4xf32>\n}\n",
        r"model\.mlir:1:1: error: input 0 of @main has type memref<4xf32>; expected a static-shape tensor",
    ),
    "no main": (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n",
        r"model\.mlir: error: the module has no function @main",
    ),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_what_the_fuzzer_found(case, tmp_path):
    import byoc

    text, message = FOUND[case]
    path = tmp_path / "model.mlir"
    path.write_text(text)
    with pytest.raises(byoc.ByocError, match=message):
        byoc.compile(path, targets=[], cache=False)
