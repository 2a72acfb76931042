"""The exceptions sieve raises (all are ``sieve.SieveError``)."""

from __future__ import annotations


class SieveError(Exception):
    """Base class of sieve's own exceptions.

    Raised as itself only for an internal error (a bug in sieve or in a plugin, caught at the
    boundary instead of crashing the interpreter). Bad arguments raise ``ValueError`` or
    ``TypeError``.
    """


class PipelineError(SieveError, ValueError):
    """Pipeline text that does not parse, validate or build.

    ``str(e)`` is the caret diagnostic (the source line, a caret under the mistake, the help);
    ``e.message`` the one-line form, ``e.line`` and ``e.column`` (1-based) the place.
    """

    def __init__(self, message: str, diagnostic: str, line: int, column: int) -> None:
        super().__init__(diagnostic)
        self.message = message
        self.diagnostic = diagnostic
        self.line = line
        self.column = column

    def __reduce__(self):  # picklable across processes (vLLM's engine core is one)
        return (type(self), (self.message, self.diagnostic, self.line, self.column))


class PluginError(SieveError):
    """A plugin library that cannot be loaded or whose stages clash with known ones."""


class SamplingError(SieveError, RuntimeError):
    """A stage failed while running (no finite candidate left, a grammar refusing a token)."""
