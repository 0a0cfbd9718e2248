"""The gate cannot be fooled (issue 27): each fault of the fault-injection round, reproduced from outside with a
small OpenAI-compatible server on 127.0.0.1 (tests/fakeserver.py) or the files a user has, and held: a wrong
verdict, wrong numbers, a leak or a crash is now a right verdict, the right numbers or one line with exit 2."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fakes import FASTEVAL, CountingEncoder, one_line_error, run_cli


def drift(ref, cand, *args, home):
    return run_cli(["drift", ref, cand, "--bootstrap", "0", *args], env={"FASTEVAL_HOME": str(home)})


def sweep(model, out, *args, home):
    return run_cli(["sweep", "--model", model, "--out", out, "--exams", "1", "--bootstrap", "0", *args],
                   env={"FASTEVAL_HOME": str(home)})


def table1_tau(proc) -> str:
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("FakeEncoder") or "fake-model" in ln
                and ln.split()[-1].replace(".", "").isdigit())
    return line.split()[1]


def result_of(out: Path) -> dict:
    (path,) = list(out.rglob("results.json"))
    return json.loads(path.read_text())


# --- 1. a changed deployment is never scored from the cache ----------------------------------------------------
def test_a_gate_embeds_the_candidate_afresh_every_time(servers, tmp_path):
    ref, cand = servers(), servers()
    first = drift(ref.url, cand.url, "--fail-below", "0.99", home=tmp_path)
    assert first.returncode == 0 and "conforms" in first.stdout, first.stderr
    cand.faults.noise = 0.9  # the deployment changed its vectors; /models says what it said
    posts = cand.posts
    second = drift(ref.url, cand.url, "--fail-below", "0.99", home=tmp_path)
    assert second.returncode == 1 and ": drifts" in second.stdout, second.stdout
    assert cand.posts > posts + 10, "the candidate was embedded again, not read from the cache"


def test_a_served_sweep_notices_a_changed_deployment(servers, tmp_path, caplog):
    server = servers()
    out = tmp_path / "out"
    assert sweep(server.url, out, home=tmp_path).returncode == 0
    before = result_of(out)
    again = sweep(server.url, out, home=tmp_path)
    assert again.returncode == 0 and "skipped" in again.stderr, "unchanged: skipped after a canary request"
    server.faults.noise = 0.9
    texts = server.texts
    changed = sweep(server.url, out, home=tmp_path)
    assert changed.returncode == 0 and "the deployment says what it said, but" in changed.stderr, changed.stderr
    assert changed.stderr.count("comes back at cosine") == 1, "its canaries asked and reported once"
    after = result_of(out)
    assert server.texts - texts > 400, "every text embedded again"
    assert after["key"] == before["key"]
    assert after["exams"]["exam1"]["cells"] != before["exams"]["exam1"]["cells"], "the deployment's own numbers"


# --- 2. another dimension never conforms ------------------------------------------------------------------------
def test_a_candidate_of_another_dimension_is_refused_in_one_line(servers, tmp_path):
    ref, cand = servers(), servers(dim=24)
    proc = drift(ref.url, cand.url, "--fail-below", "0.99", home=tmp_path)
    assert proc.returncode == 2
    one_line_error(proc, "24 dimensions", "16", "different models")
    assert "RuntimeWarning" not in proc.stderr
    assert cand.texts == 1, "said after one text, not after all of them (issue 45, item 9)"


def test_a_nan_never_conforms():
    from fasteval.core.results.drift import DriftReport

    report = DriftReport("a", "b", 0.99, 1, float("nan"), float("nan"), {}, [], float("nan"))
    assert report.verdict == "drifts"


# --- 3. a zero vector is an error naming its text, never cached -------------------------------------------------
def test_a_zero_vector_names_its_text_and_is_never_cached(servers, tmp_path):
    server = servers(zero_text="5 meters")
    out = tmp_path / "out"
    proc = sweep(server.url, out, home=tmp_path)
    assert proc.returncode != 0 and "a zero vector for '5 meters'" in proc.stderr, proc.stderr
    assert not list(out.rglob("results.json"))
    server.faults.zero_text = None
    healed = sweep(server.url, out, home=tmp_path)
    assert healed.returncode == 0, healed.stderr
    cached = [p for p in (tmp_path / "embeddings").glob("*.npz")]
    from fasteval.core.cache import EmbeddingCache

    table = EmbeddingCache(tmp_path).load(cached[0].stem)
    assert np.linalg.norm(table[["5 meters"]][0]) > 0.5


# --- 4. large finite vectors stay unit vectors ----------------------------------------------------------------
def test_large_finite_vectors_give_the_numbers_of_small_ones(servers, tmp_path):
    small, large = servers(), servers(scale=5e18)
    a = sweep(small.url, tmp_path / "a", home=tmp_path / "ha")
    b = sweep(large.url, tmp_path / "b", home=tmp_path / "hb")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    ta = [c["tau"] for c in result_of(tmp_path / "a")["exams"]["exam1"]["cells"]]
    tb = [c["tau"] for c in result_of(tmp_path / "b")["exams"]["exam1"]["cells"]]
    assert ta == tb and all(t is not None for t in tb)


# --- 5. a cached entry of another dimension under the right key is rebuilt --------------------------------------
def test_a_cache_entry_cut_to_another_dimension_with_its_key_kept_is_rebuilt(tmp_path, caplog):
    from fasteval.core.embeddings import EmbeddingTable
    from fasteval.core.cache import EmbeddingCache
    from fasteval.core.runs.job import Job
    from fasteval.core.plan import embedding_key
    from fasteval.core.runs.sweep import run_sweep

    def loader(name, **options):
        return CountingEncoder(name)

    run_sweep([Job("m", exams=(1,), bootstrap=0)], tmp_path / "a", loader, cache_root=tmp_path)
    key = embedding_key(Job("m", exams=(1,), bootstrap=0).scoring.settings(CountingEncoder("m").info))
    cache = EmbeddingCache(tmp_path)
    full = cache.load(key)
    cut = EmbeddingTable()
    texts = [t for t, _ in full.items()]
    cut.add(texts, np.stack([v for _, v in full.items()])[:, :10])
    cache.save(key, cut)  # the same key, ten dimensions
    with caplog.at_level("WARNING", logger="fasteval"):
        again = run_sweep([Job("m", exams=(1,), bootstrap=0)], tmp_path / "b", loader, cache_root=tmp_path)[0]
    assert "10" in caplog.text and "not what it embeds now" in caplog.text
    first = json.loads(next((tmp_path / "a").rglob("results.json")).read_text())["exams"]["exam1"]["cells"]
    second = json.loads((again.path / "results.json").read_text())["exams"]["exam1"]["cells"]
    assert [c["tau"] for c in first] == [c["tau"] for c in second]


def test_a_local_model_that_embeds_a_batch_differently_keeps_its_cache(tmp_path, caplog):
    """A local model is its content hashes: its canary is checked for its dimension only, so a model whose
    vectors depend on the batch (int8: activations quantized per batch) keeps its cache."""
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    class PerBatch(CountingEncoder):
        def encode(self, texts):
            out = super().encode(texts)
            return out + 0.05 * len(texts)  # another batch, another vector

    calls = []

    def loader(name, **options):
        enc = PerBatch(name)
        calls.append(enc)
        return enc

    run_sweep([Job("m", exams=(1,), bootstrap=0)], tmp_path / "out", loader, cache_root=tmp_path)
    with caplog.at_level("WARNING", logger="fasteval"):
        again = run_sweep([Job("m", exams=(1,), bootstrap=0, similarity="l2")], tmp_path / "out", loader,
                          cache_root=tmp_path)[0]
    assert "not what it embeds now" not in caplog.text and again.status == "done"
    assert [len(c) for c in calls[-1].calls] == [1], "one canary, every other text from the cache"


# --- 6. identical models conform at --fail-below 1 --------------------------------------------------------------
def test_identical_models_conform_at_fail_below_one(servers, tmp_path):
    ref, cand = servers(), servers()
    proc = drift(ref.url, cand.url, "--fail-below", "1", home=tmp_path)
    assert proc.returncode == 0 and "conforms" in proc.stdout, proc.stdout + proc.stderr


# --- 7. a batch size a server forced is not a setting; an over-long text is named -------------------------------
def test_a_forced_smaller_batch_keeps_the_key_and_a_rerun_sends_nothing_again(servers, tmp_path):
    server = servers(max_batch=7)
    out = tmp_path / "out"
    assert sweep(server.url, out, home=tmp_path).returncode == 0
    posts = server.posts
    again = sweep(server.url, out, home=tmp_path)
    assert again.returncode == 0 and "skipped" in again.stderr
    assert server.posts - posts == 1, "one request of canaries, nothing re-sent"
    assert len(list(out.rglob("results.json"))) == 1, "one key"


def test_an_over_long_text_is_reported_and_the_batch_size_kept(servers, tmp_path):
    ref, cand = servers(), servers(max_chars=200)
    proc = drift(ref.url, cand.url, "--json", home=tmp_path)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["verdict"] == "conforms", "a behaviour, not a failure"
    assert all(not g["failed"] for g in report["groups"].values())
    (finding,) = [b for b in report["behaviours"] if b["group"] == "length"]
    assert finding["side"] == "candidate" and finding["behaviour"] == "refuses long inputs" and finding["texts"] > 0
    assert "maximum context length is 256 tokens" in finding["message"] and finding["shortest_chars"] > 200
    assert "sending at most 1" not in proc.stderr
    text = drift(ref.url, cand.url, home=tmp_path).stdout
    assert f"behaviour: {cand.url} refuses" in text and "of the length group that the reference embeds" in text


# --- 8. credentials in the URL never reach the terminal or a file ----------------------------------------------
def test_credentials_in_the_url_are_never_printed_or_written(servers, tmp_path):
    server = servers()
    secret = server.url.replace("http://", "http://user:pa55word@") + "?api_key=k3y-123"
    out = tmp_path / "out"
    dead = "http://user:pa55word@127.0.0.1:9/v1?api_key=k3y-123"
    proc = run_cli(["sweep", "--model", secret, "--model", dead, "--out", out, "--exams", "1", "--bootstrap", "0"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")})
    d = run_cli(["drift", secret, secret, "--bootstrap", "0", "--json", "--out", tmp_path / "drift"],
                env={"FASTEVAL_HOME": str(tmp_path / "home")})
    assert d.returncode == 0, d.stderr
    shown = proc.stdout + proc.stderr + d.stdout + d.stderr
    assert "pa55word" not in shown and "k3y-123" not in shown
    for path in [*out.rglob("*"), *(tmp_path / "drift").rglob("*"), *(tmp_path / "home").rglob("*")]:
        if path.is_file():
            assert b"pa55word" not in path.read_bytes() and b"k3y-123" not in path.read_bytes(), path
    assert all("api_key=k3y-123" in path for path, _ in server.seen), "the query is kept on every request"
    assert all(h.get("Authorization", "").startswith("Basic ") for _, h in server.seen)


# --- 9. large drifts in blocks ----------------------------------------------------------------------------------
def test_collisions_and_neighbours_in_blocks_equal_the_whole_matrices():
    from fasteval.core.runs.drift import score as D

    rng = np.random.default_rng(0)
    a = rng.normal(size=(700, 8))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = a.copy()
    b[::7] = b[0]  # collisions: every 7th text becomes one
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    pairs, agreement, count = D.pairwise(a, b, block=64, listed=10_000)
    sa, sb = a @ a.T, b @ b.T
    want = {(i, j) for i, j in zip(*np.nonzero(np.triu((sa < D.COLLISION_APART) & (sb >= D.COLLISION_SAME), 1)))}
    assert {(i, j) for i, j, _, _ in pairs} == want and len(want) == 100 * 99 // 2 == count
    # a candidate that collapses texts onto one vector: every collision counted, the first few listed, in order
    few, _, counted = D.pairwise(a, b, block=64, listed=7)
    assert counted == count and [(i, j) for i, j, _, _ in few] == sorted(want)[:7]
    np.fill_diagonal(sa, -np.inf)
    np.fill_diagonal(sb, -np.inf)
    na, nb = np.argsort(-sa, axis=1)[:, :10], np.argsort(-sb, axis=1)[:, :10]
    brute = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(na.tolist(), nb.tolist())])
    assert agreement == pytest.approx(brute, abs=0.02)  # argpartition and argsort may part ties differently


# --- 10. a long text costs its own length in the cache ---------------------------------------------------------
def test_one_long_text_does_not_blow_up_the_cache(tmp_path):
    from fasteval.core.embeddings import EmbeddingTable
    from fasteval.core.cache import EmbeddingCache

    table = EmbeddingTable()
    texts = ["x" * 50_000] + [f"{i} meters" for i in range(2000)]
    table.add(texts, np.ones((len(texts), 4), np.float32))
    cache = EmbeddingCache(tmp_path)
    cache.save("k", table)
    assert cache.path("k").stat().st_size < 300_000
    back = cache.load("k")
    assert [t for t, _ in back.items()] == texts
    old = tmp_path / "embeddings" / "old.npz"  # an entry written before: texts as a fixed-width unicode array
    np.savez(old, key=np.array("old"), texts=np.array(["1 meter", "2 meters"]), vectors=np.ones((2, 4), np.float32))
    assert [t for t, _ in cache.load("old").items()] == ["1 meter", "2 meters"], "still read, not re-embedded"


# --- 12. malformed answers are errors, and drift's errors exit 2 ------------------------------------------------
def test_a_malformed_answer_makes_drift_exit_2_not_1(servers, tmp_path):
    ref, cand = servers(), servers(index_null=True)
    proc = drift(ref.url, cand.url, "--fail-below", "0.99", "--no-conformance", home=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


# --- 13. a protocol's size has limits, checked before anything is allocated -------------------------------------
@pytest.mark.parametrize("ranges, fragment", [
    ("".join(f'[[ranges]]\nname = "r{k}"\nlinspace = {{ start = 0, stop = 1, num = 2000 }}\n' for k in range(10)),
     "similarity pairs"),
    ('[[ranges]]\nname = "tiny"\nstep = { start = 0, stop = 1, step = 1e-12 }\n', "more than a range takes"),
])
def test_a_protocol_too_large_is_refused_at_once(tmp_path, ranges, fragment):
    import time

    from fasteval.core.protocol.loading import load_protocol
    from fasteval.core.protocol.spec import ProtocolError

    f = tmp_path / "big.toml"
    f.write_text('[protocol]\nname = "big"\nversion = "1"\n[[quantities]]\nname = "meter"\nunit = "meter"\n'
                 'forms.en = ["meter", "meters"]\n' + ranges)
    start = time.perf_counter()
    with pytest.raises(ProtocolError, match=fragment):
        load_protocol(f)
    assert time.perf_counter() - start < 5


# --- 14. cache paths that are not ours ---------------------------------------------------------------------------
def test_a_folder_at_a_cache_entrys_path_is_left_alone_and_the_run_goes_on(tmp_path, caplog):
    from fasteval.core.runs.job import Job
    from fasteval.core.plan import embedding_key
    from fasteval.core.runs.sweep import run_sweep

    def loader(name, **options):
        return CountingEncoder(name)

    key = embedding_key(Job("m", exams=(1,), bootstrap=0).scoring.settings(CountingEncoder("m").info))
    folder = tmp_path / "embeddings" / f"{key}.npz"
    (folder / "mine").mkdir(parents=True)
    with caplog.at_level("WARNING", logger="fasteval"):
        outcome = run_sweep([Job("m", exams=(1,), bootstrap=0)], tmp_path / "out", loader, cache_root=tmp_path)[0]
    assert outcome.status == "done" and (folder / "mine").is_dir()
    assert "left alone" in caplog.text and "discarding" not in caplog.text


def test_a_file_at_a_cached_exports_path_is_rebuilt(tiny_st_folder, tmp_path, monkeypatch):
    from fasteval.models.onnx import export as export_module
    from fasteval.models.sources.folder import content_hash, load_folder

    home = tmp_path / "home"
    dest = export_module.export_dir(home, content_hash(tiny_st_folder), "fp32")
    dest.parent.mkdir(parents=True)
    dest.write_text("not an export")
    out = export_module.export(load_folder(tiny_st_folder), home)
    assert out == dest and (dest / "model.onnx").is_file()


# --- 15. a read-only FASTEVAL_HOME that holds what is needed gives results --------------------------------------
def test_a_read_only_home_with_the_export_and_embeddings_gives_results(tiny_st_folder, tmp_path):
    home, out = tmp_path / "home", tmp_path / "out"
    env = {**os.environ, "FASTEVAL_HOME": str(home), "FASTEVAL_DEBUG": ""}
    args = ["sweep", "--model", str(tiny_st_folder), "--exams", "1", "--bootstrap", "0", "--provider", "cpu"]
    first = subprocess.run(FASTEVAL + args + ["--out", str(out / "a")], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here to make the home read-only")
    script = (f"mount --bind {home} {home} && mount -o remount,ro,bind {home} && "
              + " ".join([sys.executable, "-c", "'from fasteval.cli.main import main; main()'", *args,
                          "--out", str(out / "b")]))
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "Cannot write" not in proc.stderr, proc.stderr
    a, b = (json.loads(next((out / x).rglob("results.json")).read_text()) for x in ("a", "b"))
    assert a["key"] == b["key"] and a["exams"]["exam1"]["cells"] == b["exams"]["exam1"]["cells"]


def test_an_empty_read_only_home_names_fasteval_home_not_out(tiny_st_folder, tmp_path):
    """An empty read-only FASTEVAL_HOME: the export (a folder) and the download (a registry name) cannot be cached,
    and the line names FASTEVAL_HOME, not --out (the output folder is writable); never an internal error (issue 45,
    item 5)."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here to make the home read-only")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "FASTEVAL_HOME": str(home), "FASTEVAL_DEBUG": ""}
    for model in (str(tiny_st_folder), "all-MiniLM-L6-v2"):
        script = (f"mount --bind {home} {home} && mount -o remount,ro,bind {home} && "
                  + " ".join([sys.executable, "-c", "'from fasteval.cli.main import main; main()'", "sweep",
                              "--model", model, "--exams", "1", "--bootstrap", "0", "--out", str(tmp_path / "out")]))
        proc = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        line = one_line_error(proc, "Cannot write to fasteval's cache folder", "Fix: set FASTEVAL_HOME")
        assert "--out" not in line


def test_a_slow_servers_paper_calls_go_in_flight_with_the_same_numbers(servers, tmp_path):
    """--concurrency 8 against a server that takes 0.1 s a request: the paper's calls (one a group) are sent up to 8
    at once, not one after another, the same requests with the same texts, and the result is the sequential run's
    to the last digit (issue 45, item 6). Before, one was in flight at a time whatever --concurrency said."""
    runs = {}
    for concurrency in (1, 8):
        server = servers(delay=0.1)
        out = tmp_path / f"c{concurrency}"
        proc = run_cli(["sweep", "--model", server.url, "--exams", "1", "--bootstrap", "0", "--concurrency",
                        concurrency, "--out", out, "-q"], env={"FASTEVAL_HOME": str(tmp_path / f"home{concurrency}")})
        assert proc.returncode == 0, proc.stderr
        result = json.loads(next(out.rglob("results.json")).read_text())
        runs[concurrency] = (server, result)
    (one, a), (eight, b) = runs[1], runs[8]
    assert one.peak_in_flight == 1 and 2 <= eight.peak_in_flight <= 8, (one.peak_in_flight, eight.peak_in_flight)
    assert sorted(map(tuple, one.inputs)) == sorted(map(tuple, eight.inputs)) and one.posts == eight.posts > 10
    assert json.dumps(a["exams"], sort_keys=True) == json.dumps(b["exams"], sort_keys=True)


# --- 17. drift validates everything before the first request ----------------------------------------------------
def test_drift_refuses_too_many_texts_before_sending_one(servers, tmp_path):
    ref, cand = servers(), servers()
    many = tmp_path / "many.txt"
    many.write_text("\n".join(f"text number {i}" for i in range(20_001)))
    proc = drift(ref.url, cand.url, "--texts", many, home=tmp_path)
    one_line_error(proc, "more than drift compares")
    assert ref.posts == 0 and cand.posts == 0
    taken = tmp_path / "taken"
    (taken / "mine.txt").parent.mkdir()
    (taken / "mine.txt").write_text("keep")
    proc = drift(ref.url, cand.url, "--out", taken, home=tmp_path)
    one_line_error(proc, "not an earlier output")
    assert ref.posts == 0 and cand.posts == 0


# --- 18. a file named `paper` in the working directory ---------------------------------------------------------
def test_a_file_named_paper_here_changes_nothing_fasteval_loads_by_itself(servers, tmp_path):
    (tmp_path / "paper").write_text("my notes")
    server = servers()
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    d = run_cli(["drift", server.url, server.url, "--bootstrap", "0", "--no-conformance"], env=env, cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    s = run_cli(["sweep", "--model", server.url, "--exams", "1", "--bootstrap", "0", "--out", tmp_path / "o"],
                env=env, cwd=tmp_path)
    assert s.returncode == 0, s.stderr
    c = run_cli(["check", "--model", server.url, "2 km", "2000 m", "2 m"], env=env, cwd=tmp_path)
    assert c.returncode == 0, c.stderr
    asked = run_cli(["sweep", "--model", server.url, "--protocol", "paper", "--out", tmp_path / "p"], env=env,
                    cwd=tmp_path)
    one_line_error(asked, "both a built-in protocol and the file")


# --- 19. check shows control characters escaped -----------------------------------------------------------------
def test_check_escapes_control_characters(servers, tmp_path):
    server = servers()
    proc = run_cli(["check", "--model", server.url, "1 m", "2 m\x08\x07", "3 m"],
                   env={"FASTEVAL_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "\x08" not in proc.stdout and "\x07" not in proc.stdout and "\\x08\\x07" in proc.stdout


# --- the gate round 2 (issue 28): identity, CI formats --------------------------------------------------------
def test_expect_model_fails_a_deployment_that_serves_another_model(servers, tmp_path):
    ref, cand = servers(), servers()
    cand.model = "Qwen3-Embedding-8B-Q4"  # the wrong model served "healthy"
    wrong = drift(ref.url, cand.url, "--expect-model", "fake-model", "--no-conformance", home=tmp_path)
    assert wrong.returncode == 1 and ": drifts" in wrong.stdout
    assert "the candidate says it is 'Qwen3-Embedding-8B-Q4', expected 'fake-model'" in wrong.stdout
    cand.model = "fake-model"
    right = drift(ref.url, cand.url, "--expect-model", "fake-model", "--no-conformance", "--json", home=tmp_path)
    report = json.loads(right.stdout)
    assert right.returncode == 0 and report["identity"]["candidate"]["model"] == "fake-model"
    assert report["identity"]["candidate"]["kind"] == "served" and report["identity_mismatch"] is None
    assert report["identity_match"] == "exactly"
    # infinity serves a model by its path: the id as the last path component(s) is the same model (issue 45, 10);
    # the rule itself on every form, the command on one
    from fasteval.core.runs.drift.checks.identity import model_id_match

    cand.model = "models/sentence-transformers/fake-model"
    pathy = drift(ref.url, cand.url, "--expect-model", "sentence-transformers/fake-model", "--no-conformance",
                  "--no-invariance", home=tmp_path)
    assert pathy.returncode == 0, pathy.stdout + pathy.stderr
    assert ("the expected model, named as the last path components of 'models/sentence-transformers/fake-model'"
            in pathy.stdout)
    assert model_id_match(cand.model, "fake-model") == f"as the last path component of {cand.model!r}"
    for other in ("ake-model", "models/fake-model", "other/fake-model"):
        assert model_id_match(cand.model, other) is None, other


def test_an_unknown_group_to_accept_is_one_line_before_anything_is_sent(servers, tmp_path):
    ref, cand = servers(), servers()
    proc = drift(ref.url, cand.url, "--accept", "scripts", "--accept", "hangul", home=tmp_path)
    assert proc.returncode == 2
    one_line_error(proc, "no group 'hangul' to accept", "scripts")
    assert cand.posts == 0 and ref.posts == 0


def test_junit_has_a_case_per_group_and_names_the_worst_text(servers, tmp_path):
    from xml.etree import ElementTree as ET

    ref, cand = servers(), servers(noise=0.9)
    proc = drift(ref.url, cand.url, "--fail-below", "0.99", "--junit", tmp_path / "drift.xml", home=tmp_path)
    assert proc.returncode == 1
    suite = ET.parse(tmp_path / "drift.xml").getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    from fasteval.core.protocol.conformance import conformance_groups

    expected = {f"group {g.name}" for g in conformance_groups()} | {"group protocol", "collisions", "identity"}
    assert expected <= set(cases)
    failure = cases["group protocol"].find("failure")
    assert failure is not None and "worst cosine" in failure.get("message") and "'" in failure.get("message")
    assert int(suite.get("failures")) >= 1 and int(suite.get("tests")) == len(cases)
    assert cases["identity"].find("failure") is None
    # names CI viewers show as one (a URL's dots made a package tree), messages of a readable length
    assert {c.get("classname") for c in cases.values()} == {"fasteval_drift_" + "_".join(
        part for part in re.split(r"[^0-9A-Za-z_-]+", cand.url) if part)}
    messages = [e.get("message") for c in cases.values() for e in c if e.tag in ("failure", "skipped")]
    assert messages and all(len(m) <= 300 for m in messages)


def test_a_batch_dependent_deployment_is_caught_and_a_faithful_one_is_not(servers, tmp_path):
    ref, faithful, batchy = servers(), servers(), servers(per_batch=0.02)
    good = json.loads(drift(ref.url, faithful.url, "--json", "--no-conformance", home=tmp_path).stdout)
    assert good["verdict"] == "conforms" and len(good["invariance"]) == 8
    assert all(r["worst"] > 0.999999 and r["max_abs"] == 0.0 for r in good["invariance"])
    proc = drift(ref.url, batchy.url, "--fail-below", "0.5", "--no-conformance", home=tmp_path)
    assert proc.returncode == 1 and ": drifts" in proc.stdout, proc.stdout
    assert "invariance of the candidate" in proc.stdout and "in a batch of 32" in proc.stdout
    bad = json.loads(drift(ref.url, batchy.url, "--json", "--no-conformance", home=tmp_path).stdout)
    worst = {r["condition"]: r["worst"] for r in bad["invariance"]}
    assert worst["in a batch of 32"] < 0.999 and worst["in a batch of 2"] > worst["in a batch of 32"]
    skipped = json.loads(drift(ref.url, batchy.url, "--json", "--no-conformance", "--no-invariance",
                               home=tmp_path).stdout)
    assert skipped["invariance"] == []


def test_several_candidates_end_with_one_table(servers, tmp_path):
    """A ladder (here: the faithful copy, another model, a batch-dependent copy) in one run: one report each and
    one table, JSON and JUnit with a suite per candidate, the worst exit code."""
    from xml.etree import ElementTree as ET

    ref, same, other, batchy = servers(), servers(), servers(noise=0.9), servers(per_batch=0.02)
    args = ["drift", ref.url, same.url, other.url, batchy.url, "--bootstrap", "0", "--no-conformance",
            "--fail-below", "0.99"]
    proc = run_cli([*args, "--junit", tmp_path / "j.xml", "--out", tmp_path / "out"],
                   env={"FASTEVAL_HOME": str(tmp_path)})
    assert proc.returncode == 1, proc.stderr
    table = proc.stdout.split("fasteval drift: 3 candidates against", 1)[1].splitlines()
    verdicts = {ln.split()[0]: ln.split()[1] for ln in table[3:] if ln.strip()}
    assert verdicts == {same.url: "conforms", other.url: "drifts", batchy.url: "drifts"}
    data = json.loads(run_cli([*args, "--json"], env={"FASTEVAL_HOME": str(tmp_path)}).stdout)
    assert [r["candidate"] for r in data["ladder"]] == [same.url, other.url, batchy.url]
    assert data["ladder"][2]["batch_worst"] < 0.999 < data["ladder"][0]["batch_worst"]
    assert len(data["candidates"]) == 3 and data["candidates"][1]["verdict"] == "drifts"
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.tag == "testsuites" and len(list(root)) == 3
    assert (tmp_path / "out" / "ladder.csv").read_text().startswith("candidate,verdict,precision,worst")
    assert data["ladder"][0]["reasons"] == "" and "batch: in a batch of 32" in data["ladder"][2]["reasons"]
    assert data["ladder"][1]["reasons"].startswith("protocol "), "another model: named by the group that drifts"
    assert all(r["reasons"] in "\n".join(table) for r in data["ladder"]), "the why column is whole, never cut"
    from fasteval.core.report.drift import junit_name

    folders = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert folders == [f"{k}-{junit_name(s.url)}" for k, s in enumerate((same, other, batchy), 1)], folders
    assert json.loads((tmp_path / "out" / folders[0] / "drift.json").read_text())["verdict"] == "conforms"


def test_drifts_errors_name_no_option_it_does_not_take(servers, tmp_path):
    ref = servers()
    line = one_line_error(drift(ref.url, "http://127.0.0.1:9/v1", home=tmp_path), "Nothing answers at")
    assert "--model" not in line and "its URL" in line


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupted_sweep_resumes_from_what_it_embedded(servers, tmp_path, sig):
    """A real Ctrl-C (SIGINT, with its default handler, as a terminal's is: a background process of a
    non-interactive shell starts with SIGINT ignored) or SIGTERM (a scheduler's preemption, `timeout`) in the middle
    of a model's embedding: exit 130 or 143, and the rerun sends only what was not embedded (issue 45, item 14)."""
    import signal
    import time

    server = servers(delay=0.1)
    out, env = tmp_path / "out", {**os.environ, "FASTEVAL_HOME": str(tmp_path / "home"), "FASTEVAL_DEBUG": ""}
    args = ["sweep", "--model", server.url, "--exams", "1", "--bootstrap", "0", "--out", str(out), "-q"]
    proc = subprocess.Popen(FASTEVAL + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while server.posts < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == {"SIGINT": 130, "SIGTERM": 143}[sig], err
    assert "a rerun resumes from it" in err and "Traceback" not in err
    embedded = server.texts
    assert not any(out.rglob("results.json"))
    server.texts = 0
    again = subprocess.run(FASTEVAL + args, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    fresh = servers()
    whole = run_cli(args[:2] + [fresh.url] + args[3:-3] + ["--out", tmp_path / "whole"],
                    env={"FASTEVAL_HOME": str(tmp_path / "home2")})
    assert whole.returncode == 0, whole.stderr
    # the rerun sends the texts not yet embedded, and a few canaries to trust the cached ones (never all again)
    assert embedded > 0 and server.texts <= fresh.texts - embedded + 10, (embedded, server.texts, fresh.texts)


def test_a_killed_sweep_keeps_its_last_checkpoint(tmp_path):
    """A process killed outright (SIGKILL, the OOM killer: no finally runs) keeps what its last checkpoint saved:
    with checkpoints after every call, the rows of every call before the kill are in the cache (issue 45, item 14)."""
    script = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
from fakes import CountingEncoder
import fasteval.core.cache as cache_module
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

cache_module.CHECKPOINT_S = 0.0

class Killed(CountingEncoder):
    calls = 0
    def encode(self, texts):
        Killed.calls += 1
        if Killed.calls == 6:
            os._exit(9)
        return super().encode(texts)

from pathlib import Path
run_sweep([Job("org/killed", exams=(1,))], Path({str(tmp_path / "out")!r}), lambda name, **o: Killed(name),
          cache_root=Path({str(tmp_path / "cache")!r}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    (saved,) = (tmp_path / "cache").rglob("*.npz")
    with np.load(saved) as data:
        rows = len(data["vectors"])
    from fasteval.core.plan import plan, scoring

    calls, seen = [], set()  # the first five calls' texts, as embed_groups makes them
    for group in plan(CountingEncoder("org/killed"), scoring(exams=(1,))).groups():
        new = [t for t in dict.fromkeys(group) if t not in seen]
        if new:
            calls.append(new)
            seen.update(new)
    assert rows == sum(len(c) for c in calls[:5]) > 0, rows


def test_state_and_order_invariance_and_the_bitwise_tier(servers, tmp_path):
    """A server whose vectors move with its state (each request shifts them a little) is caught alone again after
    traffic; one whose numbers differ by 1e-9 with the batch conforms at the cosine tier and drifts at the bitwise
    tier (--invariance bitwise), each condition's largest difference reported."""
    ref = servers()
    moving = json.loads(drift(ref.url, servers(per_request=0.01).url, "--json", "--no-conformance",
                              "--fail-below", "0.5", home=tmp_path).stdout)
    worst = {r["condition"]: r for r in moving["invariance"]}
    assert worst["alone again after traffic"]["worst"] < 0.999 and moving["verdict"] == "drifts"
    assert "batch: alone again after traffic" in " ".join(moving["reasons"])
    nearly = servers(per_batch=1e-9)
    cosine = json.loads(drift(ref.url, nearly.url, "--json", "--no-conformance", home=tmp_path).stdout)
    assert cosine["verdict"] == "conforms" and "invariance_tier" not in cosine
    rows = {r["condition"]: r for r in cosine["invariance"]}
    assert 0 < rows["in a batch of 32"]["max_abs"] < 1e-7 and rows["in a shuffled order"]["max_abs"] == 0.0
    proc = drift(ref.url, nearly.url, "--no-conformance", "--invariance", "bitwise", home=tmp_path)
    assert proc.returncode == 1 and "bitwise: in a batch of 32 differs by" in proc.stdout, proc.stdout
    bad = drift(ref.url, nearly.url, "--no-conformance", "--invariance", "bitwisee", home=tmp_path)
    assert bad.returncode == 2 and "invariance tier" in bad.stderr


def test_the_norm_gate_catches_a_server_that_scales_or_normalises(servers, tmp_path):
    """The model's vectors are not unit vectors (FakeEncoder's): a deployment that scales them by 1.1, or returns
    them normalised, keeps every cosine and still drifts by its norms (dot-product users see it); the faithful one
    conforms with its norms compared."""
    ref = servers()
    faithful = json.loads(drift(ref.url, servers().url, "--json", "--no-conformance", "--no-invariance",
                                home=tmp_path).stdout)
    assert faithful["verdict"] == "conforms" and faithful["norms"]["compared"] == 16
    assert faithful["norms"]["worst_ratio"] == pytest.approx(1.0) and not faithful["norms"]["reference_unit"]
    for faults, said in (({"scale": 1.1}, "1.1x the reference's"), ({"normalize": True}, "returns unit vectors")):
        proc = drift(ref.url, servers(**faults).url, "--no-conformance", "--no-invariance", home=tmp_path)
        assert proc.returncode == 1 and "norms:" in proc.stdout and said in proc.stdout, proc.stdout
        assert "mean cosine 1.00000" in proc.stdout, "every cosine kept"


def test_base64_answers_are_held_to_the_float_ones(servers, tmp_path):
    """The same texts asked as float and as base64: a faithful server's agree (little-endian, as OpenAI's format
    is); one that encodes big-endian is named (its vectors also drift: fasteval reads OpenAI's format)."""
    ref = servers()
    good = json.loads(drift(ref.url, servers().url, "--json", "--no-conformance", "--no-invariance",
                            home=tmp_path).stdout)
    assert good["base64"] == {"compared": 1, "max_abs": good["base64"]["max_abs"], "endianness": "little"}
    assert good["base64"]["max_abs"] <= 1e-6 and good["verdict"] == "conforms"
    proc = drift(ref.url, servers(big_endian=True).url, "--no-conformance", "--no-invariance", home=tmp_path)
    assert proc.returncode == 1 and "base64: its base64 vectors are big-endian float32" in proc.stdout, proc.stdout
    assert "mean cosine 1.00000" in proc.stdout, "its float answers were read instead: the rest measures them"
