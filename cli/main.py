"""The `fasteval` command: the app of ``cli.app`` with every command registered (``cli.sweep``, ``cli.results``,
``cli.deploy``). Parses arguments, calls the library, prints."""
from __future__ import annotations

import os
import sys

from ..core.errors import FastevalError
# the commands register on the app as their modules load, in the order `fasteval --help` lists them
from . import sweep  # noqa: F401, I001
from . import results  # noqa: F401, I001
from . import deploy  # noqa: F401, I001
from .app import _log_to_stderr, app, internal_error_line  # noqa: F401 (_log_to_stderr: the handler tests install)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's preemption or time limit, ``kill``, ``timeout``): unwound as Ctrl-C is, so what a
    sweep embedded is cached and a rerun resumes from it; exit 143."""


def _terminated(signum, frame) -> None:
    raise Terminated()


def main() -> None:
    import signal

    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # left alone where a host process set its own
        signal.signal(signal.SIGTERM, _terminated)
    try:
        app()
    except FastevalError as err:  # raised outside a command body
        print(f"fasteval: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except Exception as err:  # a bug, not bad input: one line unless the user asks for the traceback
        if os.environ.get("FASTEVAL_DEBUG"):
            raise
        print(internal_error_line(err), file=sys.stderr)
        sys.exit(1)
