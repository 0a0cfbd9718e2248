"""Typed errors. The CLI turns every FastevalError into one line and a non-zero exit code."""

from __future__ import annotations

import logging


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


class InputRefusedError(ModelError):
    """A model (a server) refuses one input as too long for it; ``text`` is that input. A behaviour to report
    (the reference may truncate where the deployment refuses), not a fault of the run."""

    def __init__(self, problem: str, fix: str | None = None, text: str = "", message: str = ""):
        super().__init__(problem, fix)
        self.text, self.message = text, message


class SourceError(FastevalError):
    """A model source (PyPI, a hub) that cannot be reached or gives the wrong bytes."""

    exit_code = 3


class OutputError(FastevalError):
    """A result folder that cannot be written."""


def cut(text: str, limit: int | None) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis standing for the rest (None: as it is): at the last
    space before the limit, mid-word only when that would drop more than half."""
    if limit is None or len(text) <= limit:
        return text
    kept = text[:limit - 1]
    space = kept.rfind(" ")
    return (kept[:space] if space > limit // 2 else kept).rstrip() + "…"


def first_line(err: BaseException, limit: int | None = None) -> str:
    """The first non-empty line of an exception's text (its type name when it has none), cut to ``limit``."""
    if isinstance(err, OSError) and err.strerror:
        text = err.strerror
    else:
        text = next((line.strip() for line in str(err).splitlines() if line.strip()), "") or type(err).__name__
    return cut(text, limit)


def warn_rebuilt(what: str, path, err: BaseException | str) -> None:
    """The one warning line for derived data (a cache entry, an export, a download) that is unreadable and is
    discarded and rebuilt: caches heal, they are not reported as errors."""
    reason = err if isinstance(err, str) else f"{type(err).__name__}: {first_line(err, 120)}"
    logging.getLogger("fasteval").warning("%s %s is unreadable (%s); discarding it and rebuilding", what, path, reason)

