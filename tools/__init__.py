"""Command-line tools: byoc-opt, byoc-translate, byoc-run."""
