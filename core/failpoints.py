"""Failpoints: named places where the tests make fasteval fail as the world does (a SIGKILL, a slow disk, another
process), to hold the promises that a crash leaves nothing half-written, a rerun resumes and caches heal.

``FASTEVAL_TEST_HOOK="POINT:ACTION"`` arms one point; unset (always, outside the tests), ``failpoint`` returns at
once. The points: ``staged`` and ``between-renames`` (core/io.py's staged writer), ``export-checked`` (an export
once its cache was checked), ``export-reading`` (an export reading its own copy of the folder) and
``export-fusing`` (the fp32 fusions; all three in models/onnx/export.py). tests/runs/test_faults.py,
tests/runs/test_heal.py, tests/models/test_folder_inputs.py and tests/models/test_models.py arm them.
"""
from __future__ import annotations

import os
from pathlib import Path


def failpoint(point: str) -> None:
    """Fault injection for the tests (FASTEVAL_TEST_HOOK="POINT:kill", "POINT:fail", "POINT:sleep=SECONDS",
    "POINT:wait=PATH" or "POINT:pause=DIR"): a SIGKILL, a RuntimeError (a library failing), a pause, a wait until PATH
    exists, or a handshake (DIR/reached is created, then
    DIR/go is waited for; two minutes at most) at a named point (of the staged writer; an export), as a crash, a
    slow disk or another process would. Unset, it does nothing."""
    hook = os.environ.get("FASTEVAL_TEST_HOOK", "")
    name, _, action = hook.partition(":")
    if name != point:
        return
    if action == "kill":
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "fail":
        raise RuntimeError(f"failpoint {point}")
    elif action.startswith("sleep="):
        import time

        time.sleep(float(action.split("=", 1)[1]))
    elif action.startswith(("wait=", "pause=")):
        import time

        kind, _, where = action.partition("=")
        go = Path(where)
        if kind == "pause":
            (go / "reached").touch()
            go = go / "go"
        deadline = time.monotonic() + 120
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
