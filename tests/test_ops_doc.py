"""docs/ops.md is generated from the relay dialect; CI fails when it is stale."""

from __future__ import annotations

import subprocess
import sys

from byoc.dialects import relay
from byoc.tools import gen_ops_doc


def test_ops_md_matches_the_dialect():
    current = gen_ops_doc.OPS_MD.read_text()
    assert current == gen_ops_doc.generate(), (
        "docs/ops.md is out of date with the relay dialect: run "
        "`python -m byoc.tools.gen_ops_doc` and commit the result"
    )


def test_every_op_is_listed_with_its_attributes():
    text = gen_ops_doc.generate()
    for op in relay.RELAY_OPS:
        assert f"### `{op.name}`" in text
        for name in op.get_irdl_definition().properties:
            assert f"| `{name}` |" in text
    assert "| `axis` | `i64` | int | `1` |" in text  # bias_add's default
    assert "| `epsilon` | `float` | float | `1e-05` |" in text


def test_check_mode_reports_a_stale_file(tmp_path):
    stale = tmp_path / "ops.md"
    stale.write_text("# old\n")
    command = [sys.executable, "-m", "byoc.tools.gen_ops_doc", "--check", "-o", str(stale)]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 1 and "python -m byoc.tools.gen_ops_doc" in proc.stderr
    assert subprocess.run(command[:3] + ["-o", str(stale)], capture_output=True).returncode == 0
    assert subprocess.run(command, capture_output=True).returncode == 0
