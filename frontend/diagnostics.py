"""The one error type byoc raises for bad input, and how to word it.

Every user-facing failure (unparsable text, ill-typed ops, unknown backends, bad
arrays, failing kernels) is a `ByocError` whose message names the place:
`file:line:col: error: <what>`, with the source line when it is known.
"""

from __future__ import annotations

from xdsl.utils.exceptions import DiagnosticException, ParseError


class ByocError(DiagnosticException):
    """Bad input or a failed build, with a message a user can act on.

    A DiagnosticException, so `byoc-opt --verify-diagnostics` prints it like
    any verifier error.
    """


def format_parse_error(err: ParseError) -> str:
    """`file:line:col: error: msg` followed by the source line and a caret."""
    span = err.span
    context = span.print_with_context("")
    # print_with_context starts with the location line; keep only the source.
    lines = context.splitlines()
    body = "\n".join(line for line in lines[1:] if line.strip())
    return f"{span.get_location()}: error: {err.msg}\n{body}".rstrip()
