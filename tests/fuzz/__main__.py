"""python -m tests.fuzz [--kind mlir|onnx|saved|all] [--minutes N | --cases N] [--seed S]

Run from the repository's root. Prints one line of outcome counts per kind
and every finding (kept in --findings); exits 1 if anything but clean errors
and successes came out.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from .runner import KINDS, fuzz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=(*KINDS, "all"), default="all")
    parser.add_argument("--minutes", type=float, help="time per kind (default 1)")
    parser.add_argument("--cases", type=int, help="mutants per kind instead of a time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings"), help="where bad inputs are kept")
    parser.add_argument("--case-seconds", type=float, default=60.0, help="a case running longer is a hang")
    args = parser.parse_args(argv)
    minutes = args.minutes if args.minutes is not None or args.cases is not None else 1.0
    kinds = KINDS if args.kind == "all" else (args.kind,)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="byoc-fuzz-") as tmp:
        for kind in kinds:
            start = time.monotonic()
            tally = fuzz(kind, Path(tmp) / kind, minutes, args.cases, args.seed, args.findings, args.case_seconds, progress=True)
            print(f"{tally.line()}  ({time.monotonic() - start:.0f} s)", flush=True)
            for line in tally.findings:
                print(f"  {line}")
            bad += tally.bad
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
