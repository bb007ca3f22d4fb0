"""Runs mutants through a worker process and counts how each ended.

A worker (tests/fuzz/worker.py) runs many inputs one after another, so byoc
is imported once; when it dies (a signal: "crash") or outlives a case's time
limit ("hang", then it is killed) a fresh one takes over. Every input that
did not end in a clean error or a success is kept in the findings directory
with its outcome, to reproduce by hand.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from . import mutate, seeds

REPO = Path(__file__).resolve().parents[2]

OUTCOMES = (
    "clean error",
    "success",
    "unlocated error",
    "traceback",
    "crash",
    "hang",
    "wrong answer",
)
GOOD = ("clean error", "success")


class Worker:
    """One child process running cases; restarted after a crash or a hang."""

    def __init__(self, scratch: Path, case_seconds: float):
        self.scratch = scratch
        self.case_seconds = case_seconds
        self.proc: subprocess.Popen[str] | None = None
        self.log = scratch / "worker.log"

    def _start(self) -> None:
        read, write = os.pipe()
        env = dict(os.environ, BYOC_CACHE_DIR=str(self.scratch / "cache"), PYTHONHASHSEED="0")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz.worker", str(write)],
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                pass_fds=(write,),
                text=True,
                env=env,
                start_new_session=True,
            )
        os.close(write)
        self.answers = os.fdopen(read, "r")
        ready = self._answer(120.0)
        if ready is None or ready[0] != "ready":
            raise RuntimeError(f"the fuzz worker did not start: {self.log.read_text()[-2000:]}")

    def _answer(self, seconds: float) -> tuple[str, str] | None:
        """The next answer, or None if none came within `seconds` or the worker died."""
        ready, _, _ = select.select([self.answers], [], [], seconds)
        if not ready:
            return None
        line = self.answers.readline()
        if not line:
            return None
        answer = json.loads(line)
        return answer["outcome"], answer.get("detail", "")

    def run(self, kind: str, path: Path, targets: list[str]) -> tuple[str, str]:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        request = {"kind": kind, "path": str(path), "targets": targets}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self._answer(self.case_seconds)
        if answer is not None:
            return answer
        if self.proc.poll() is None:
            self.stop()
            return "hang", f"no answer in {self.case_seconds:.0f} s"
        status = self.proc.returncode
        self.stop()
        what = f"signal {signal.Signals(-status).name}" if status < 0 else f"exit {status}"
        return "crash", what

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.answers.close()
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self.proc = None


@dataclass
class Tally:
    """Outcome counts of one kind of input, and the inputs that went wrong."""

    kind: str
    counts: Counter[str] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    unverified: int = 0
    """Successes no reference could decide (onnx's and onnxruntime's disagree or refuse)."""

    @property
    def bad(self) -> int:
        return sum(n for outcome, n in self.counts.items() if outcome not in GOOD)

    def line(self) -> str:
        total = sum(self.counts.values())
        parts = ", ".join(f"{outcome} {self.counts[outcome]}" for outcome in OUTCOMES)
        note = f" ({self.unverified} successes unverified)" if self.unverified else ""
        return f"{self.kind:6} {total:6} cases: {parts}{note}"


def record(tally: Tally, outcome: str, detail: str, description: str, data: bytes, suffix: str, findings: Path | None) -> None:
    tally.counts[outcome] += 1
    tally.unverified += outcome == "success" and detail.startswith("unverified")
    if outcome in GOOD:
        return
    n = sum(tally.counts[o] for o in OUTCOMES if o not in GOOD)
    line = f"{outcome}: {detail} <- {description}"
    if findings is not None:
        findings.mkdir(parents=True, exist_ok=True)
        name = f"{tally.kind}-{n:04d}{suffix}"
        (findings / name).write_bytes(data)
        with open(findings / "findings.txt", "a") as f:
            f.write(f"{name}: {line}\n")
        line = f"{name}: {line}"
    tally.findings.append(line)


def deadline_after(minutes: float | None) -> float:
    return time.monotonic() + minutes * 60 if minutes is not None else float("inf")


KINDS = ("mlir", "onnx", "saved")
SUFFIX = {"mlir": ".mlir", "onnx": ".onnx", "saved": ".mutant"}
BATCH = 50


def fuzz(
    kind: str,
    scratch: Path,
    minutes: float | None = None,
    cases: int | None = None,
    seed: int = 0,
    findings: Path | None = None,
    case_seconds: float = 60.0,
    progress: bool = False,
) -> Tally:
    """Mutants of one kind until `minutes` pass or `cases` ran. The same seed
    and case count give the same mutants (hypothesis, seeded, no database)."""
    scratch.mkdir(parents=True, exist_ok=True)
    if kind == "mlir":
        strategy = mutate.mlir_mutants(seeds.mlir_seeds())
    elif kind == "onnx":
        strategy = mutate.onnx_mutants(seeds.onnx_seeds())
    else:
        strategy = mutate.saved_mutants(seeds.saved_seeds(scratch / "seeds"))
    tally = Tally(kind)
    deadline = deadline_after(minutes)
    worker = Worker(scratch, case_seconds)
    target = (scratch / "seeds" / "input") if kind == "saved" else scratch / "input"
    started = time.monotonic()

    def done() -> bool:
        return time.monotonic() > deadline or (cases is not None and sum(tally.counts.values()) >= cases)

    try:
        batch = 0
        while not done():
            @settings(
                max_examples=BATCH if cases is None else min(BATCH, cases - sum(tally.counts.values())),
                database=None,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis_seed(seed * 1_000_003 + batch)
            @given(st.data())
            def one(data: st.DataObject) -> None:
                # Drawn even when time is up: hypothesis checks that a choice
                # sequence it saw before draws the same way again.
                mutant = data.draw(strategy)
                if done():
                    return
                path = target.with_name(
                    (mutant.description.split(":")[0] + ".mutant") if kind == "saved" else f"input{SUFFIX[kind]}"
                )
                path.write_bytes(mutant.data)
                outcome, detail = worker.run(kind, path, mutant.targets)
                record(tally, outcome, detail, f"{mutant.description} [targets {mutant.targets}]", mutant.data, SUFFIX[kind], findings)
                if progress and sum(tally.counts.values()) % 100 == 0:
                    print(f"  {tally.line()}  ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

            one()
            batch += 1
    finally:
        worker.stop()
    return tally
