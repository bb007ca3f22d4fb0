"""The fuzzing harness: hypothesis-driven mutation of `.mlir` text, ONNX
models and saved files, each run by a worker process so a crash or a hang is
counted, not suffered.

    python -m tests.fuzz --minutes 10            # each kind for 10 minutes
    python -m tests.fuzz --kind saved --minutes 2

prints, per kind, how many inputs ended in each outcome: clean error,
success, traceback, crash, hang, wrong answer. Only the first two are
acceptable; tests/test_fuzz.py runs a short budget of each kind.
"""
