"""The fuzzing harness: hypothesis-driven mutation of `.mlir` text, ONNX
models and saved files, each run by a worker process so a crash or a hang is
counted, not suffered.

    python -m tests.fuzz --minutes 10            # each kind for 10 minutes
    python -m tests.fuzz --kind saved --cases 200 --seed 3

prints, per kind, how many inputs ended in each outcome: clean error (a
ByocError naming the input's file), success (results agree with a
reference), unlocated error, traceback, crash, hang, wrong answer. Only the
first two are acceptable; tests/test_fuzz.py runs a short fixed slice.

- seeds.py: the valid models mutated (FileCheck cases, built ONNX graphs,
  compiled saved files);
- mutate.py: the hypothesis strategies that mutate them;
- saved_files.py: the damage and doctoring of saved files, shared with
  tests/test_saved_integrity.py;
- worker.py: the child process running each input;
- runner.py: the worker's keeper, the counts, `fuzz()`.
"""
