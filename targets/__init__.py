"""Printers of IR to text, usable as `byoc-opt -t <name>`."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _c() -> type[Target]:
    from byoc.targets.c import CTarget

    return CTarget


def _report() -> type[Target]:
    from byoc.targets.report import ReportTarget

    return ReportTarget


def _dot() -> type[Target]:
    from byoc.targets.dot import DotTarget

    return DotTarget


BYOC_TARGETS: dict[str, Callable[[], type[Target]]] = {
    "c": _c,
    "report": _report,
    "dot": _dot,
}
"""byoc's output targets by name."""
