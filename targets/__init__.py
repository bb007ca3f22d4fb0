"""Printers of IR to text, usable as `byoc-opt -t <name>`."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _c() -> type[Target]:
    from byoc.targets.c import CTarget

    return CTarget


BYOC_TARGETS: dict[str, Callable[[], type[Target]]] = {
    "c": _c,
}
"""byoc's output targets by name."""
