"""How close the int8 conv of `bench/run.py` (g) is to what this CPU can do,
and what bounds its ratio to byoc's float32 conv of the same shape.

Measures, with a small C program built by the toolchain's compiler (best of
40 rounds, so a busy machine shows its quiet figures): the clock (a chain of
dependent adds, one a cycle), and how many `vpdpbusd` (64 uint8 x int8
multiply-adds), `vfmadd231ps` (16 float) and `vpdpwssd` (32 int16) on zmm
registers retire per cycle. Prints the 64->64 3x3 56x56 conv's multiply-adds
(115.6M), its time at the VNNI peak, the float conv's at the FMA peak (the
Winograd variant cblas picked for it: F(2x2,3x3) does 2.25 times fewer
multiply-adds, F(4x4,3x3) 4 times), and so the highest int8/float32 ratio at
equal efficiency; then both models, taking turns, medians and minimums, and
the share of each peak they reach. Needs AVX-512 VNNI.

    python bench/int8_peak.py [--runs 200] [--threads 1]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROGRAM = r"""
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define R12(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) op(8) op(9) op(10) op(11)
#define ADD(k) "add $1, %0\n\t"
#define VNNI(k) "vpdpbusd %%zmm30, %%zmm31, %%zmm" #k "\n\t"
#define FMA(k) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #k "\n\t"
#define WSSD(k) "vpdpwssd %%zmm30, %%zmm31, %%zmm" #k "\n\t"
#define CLOB "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"
#define BEST(i, body) t0 = now(); for (long n = 0; n < M; n++) body; t1 = now(); if (12.0 * M / (t1 - t0) > best[i]) best[i] = 12.0 * M / (t1 - t0);
int main(void) {
  const long M = 2000000;
  double best[4] = {0}, t0, t1;
  for (int round = 0; round < 40; round++) {
    long x = 0;
    BEST(0, __asm__ volatile(R12(ADD) : "+r"(x)))
    BEST(1, __asm__ volatile(R12(VNNI) ::: CLOB))
    BEST(2, __asm__ volatile(R12(FMA) ::: CLOB))
    BEST(3, __asm__ volatile(R12(WSSD) ::: CLOB))
  }
  printf("%.6e %.6e %.6e %.6e\n", best[0], best[1], best[2], best[3]);
  return 0;
}
"""

MACS = 64 * 64 * 9 * 56 * 56
"""The bench conv's multiply-adds: 64 -> 64 channels, 3x3, 56x56 outputs."""


FLOAT_KERNELS = {
    "winograd4x4_8o": ("Winograd F(4x4,3x3)", 144 / 36),
    "winograd8o": ("Winograd F(2x2,3x3)", 36 / 16),
}
"""The float conv's Winograd layouts: the kernel's name, and how many times
fewer multiply-adds than the direct conv it does (per output tile)."""


def peaks() -> tuple[float, float, float, float]:
    """Clock (Hz) and vpdpbusd, vfmadd231ps, vpdpwssd (zmm) per second."""
    from byoc.runtime.toolchain import compiler

    with tempfile.TemporaryDirectory() as tmp:
        source, binary = Path(tmp) / "peak.c", Path(tmp) / "peak"
        source.write_text(PROGRAM)
        subprocess.run([*shlex.split(compiler()), "-O2", "-march=native", str(source), "-o", str(binary)], check=True)
        out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    clock, vnni, fma, wssd = (float(v) for v in out.split())
    return clock, vnni, fma, wssd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="calls per model")
    parser.add_argument("--threads", type=int, default=1, help="byoc's threads")
    args = parser.parse_args()
    clock, vnni, fma, wssd = peaks()
    print(f"clock {clock / 1e9:.2f} GHz; per cycle: vpdpbusd zmm {vnni / clock:.2f}, "
          f"vfmadd231ps zmm {fma / clock:.2f}, vpdpwssd zmm {wssd / clock:.2f}")

    import byoc

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import qdq_models

    byoc.set_threads(args.threads)
    model = qdq_models.conv_model()
    with tempfile.TemporaryDirectory() as tmp:
        path = qdq_models.quantize(model, Path(tmp) / "conv.onnx")
        int8 = byoc.compile(path, targets=["ccompiler"])
    float32 = byoc.compile(model, targets=["cblas", "ccompiler"])
    kernel, fewer = next(
        ((name, k) for layout, (name, k) in FLOAT_KERNELS.items() if f'"{layout}"' in float32.partitioned_ir),
        ("direct", 1.0),
    )
    int8_peak = MACS / (64 * vnni)
    float_peak = MACS / fewer / (16 * fma)
    print(f"conv 64->64 3x3 56x56: {MACS / 1e6:.1f}M multiply-adds; at the VNNI peak {int8_peak * 1e3:.3f} ms, "
          f"float {kernel} at the FMA peak {float_peak * 1e3:.3f} ms: "
          f"int8/float32 {float_peak / int8_peak:.2f}x at equal efficiency")
    feeds = [np.random.default_rng(6).standard_normal(qdq_models.input_shape(model)).astype(np.float32)]
    contenders = {"int8 (ccompiler)": int8, "float32 (cblas)": float32}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(10):
        for fn in contenders.values():
            fn(*feeds)
    for _ in range(args.runs):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn(*feeds)
            times[name].append(time.perf_counter() - start)
    threads = args.threads
    for name, peak in (("int8 (ccompiler)", int8_peak), ("float32 (cblas)", float_peak)):
        median, least = float(np.median(times[name])), min(times[name])
        print(f"{name:18} {threads} thread(s): median {median * 1e3:.3f} ms, minimum {least * 1e3:.3f} ms; "
              f"{peak / threads / least:.0%} of its peak at the minimum")
    ratio = np.median(times["float32 (cblas)"]) / np.median(times["int8 (ccompiler)"])
    print(f"int8 against float32: {ratio:.2f}x (medians), "
          f"{min(times['float32 (cblas)']) / min(times['int8 (ccompiler)']):.2f}x (minimums)")


if __name__ == "__main__":
    main()
