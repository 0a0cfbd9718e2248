"""Typed errors. The CLI turns every FastevalError into one line and a non-zero exit code."""

from __future__ import annotations


class FastevalError(Exception):
    """A problem the user can fix; ``str(err)`` is one line that names the problem and the fix."""

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if fix is None else f"{problem} Fix: {fix}")


class InputError(FastevalError):
    """Bad arguments: wrong shapes, unknown options, NaN where a number is needed."""


class ModelError(FastevalError):
    """A model that cannot be found, read, exported or run."""


class SourceError(FastevalError):
    """A model source (PyPI, a hub) that cannot be reached or gives the wrong bytes."""

    exit_code = 3


class OutputError(FastevalError):
    """A result folder that cannot be written."""
