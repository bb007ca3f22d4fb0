"""lit configuration for byoc's FileCheck tests."""

import os

import lit.formats

config.name = "byoc"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "inputs"]
# The console scripts (byoc-opt, filecheck) live next to the Python running lit.
config.environment["PATH"] = os.environ.get("PATH", "")
