"""The next model's export made while the model before it runs (``core.runs.ahead``): on a GPU machine by default,
here forced, with real exports in a real process of their own."""
from __future__ import annotations

import json
import logging

import pytest

from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep


def test_the_next_model_is_exported_while_the_one_before_runs(tiny_st_folder, tiny_cls_folder, tiny_bare_folder,
                                                              tmp_path, monkeypatch, caplog):
    pytest.importorskip("onnxscript")
    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))  # nothing exported yet; the export process reads it
    a, b, c = str(tiny_st_folder), str(tiny_cls_folder), str(tiny_bare_folder)

    def jobs(*names):
        return [Job(n, {"provider": "cpu"}, exams=(1,), bootstrap=0) for n in names]

    caplog.set_level(logging.INFO, logger="fasteval")
    ahead = run_sweep(jobs(a, b), tmp_path / "ahead", cache_root=False, export_ahead=True)
    said = caplog.text
    assert [o.status for o in ahead] == ["done", "done"], ahead
    assert "tiny-bert-cls: exporting on the CPU while" in said, said
    exported_here = [r.getMessage() for r in caplog.records if r.getMessage().startswith("exporting ")]
    assert any("exporting tiny-bert to" in m for m in exported_here), exported_here
    assert not any("exporting tiny-bert-cls to" in m for m in exported_here), \
        "tiny-bert-cls was exported by the process ahead, not in its turn"

    caplog.clear()  # the default on a CPU: nothing ahead (the encoder has the cores); the third exports in its turn
    plain = run_sweep(jobs(a, b, c), tmp_path / "plain", cache_root=False)
    assert "exporting on the CPU while" not in caplog.text
    assert any(r.getMessage().startswith("exporting tiny-bert-bare to") for r in caplog.records), caplog.text
    for first, again in zip(ahead, plain):  # the export made ahead is the one the model runs on
        assert json.loads((first.path / "results.json").read_text())["exams"] == \
            json.loads((again.path / "results.json").read_text())["exams"]
        assert first.path.name == again.path.name, "the same key: the same export"


def test_a_served_model_is_never_exported_ahead_nor_its_credentials_logged(caplog):
    from fasteval.core.runs.ahead import ExportsAhead

    url = "http://user:PW9secret@127.0.0.1:1/v1?api_key=QS9secret#some-model"
    ahead = ExportsAhead([Job("all-MiniLM-L6-v2", bootstrap=0), Job(url, bootstrap=0)], when=True)
    caplog.set_level(logging.DEBUG, logger="fasteval")
    ahead.start(1, running=None)
    assert ahead.running == {}, "nothing to export for a served model"
    assert "not exported ahead (a served model)" in caplog.text
    assert "PW9secret" not in caplog.text and "QS9secret" not in caplog.text, caplog.text
