"""The edges a fault round and a new user found (issue 56), each held from outside: a served answer that inflates to
gigabytes, keys on the terminal and in files, a CI layout that lost its verdict, a calibration set with nothing to
calibrate on. Servers are tests/fakeserver.py on 127.0.0.1; every command runs as a user runs it (run_cli)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fakes import FASTEVAL, one_line_error, run_cli

GIB = 2**30


# A command run in a child of a child: the grandchild's peak resident memory comes back (RUSAGE_CHILDREN of the
# middle process counts only it).
PEAK = ("import json, resource, subprocess, sys\n"
        "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(json.dumps({'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr,\n"
        "                  'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n")


def run_measured(args: list, home) -> dict:
    import os

    env = {**os.environ, "FASTEVAL_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", PEAK, *FASTEVAL, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- 1. a served answer is read to the size its request implies ---------------------------------------------------
@pytest.mark.parametrize("route", ["/embeddings", "/models"])
def test_an_answer_that_inflates_to_a_gigabyte_is_refused_in_one_line_within_bounded_memory(route, servers,
                                                                                          tmp_path):
    """A gzip answer of about a megabyte that inflates to 1 GiB of JSON whitespace: the sweep stops reading at the
    bound its request implies and exits 2 with one line; its memory stays far below what reading it would take
    (the whole answer and its joined copy: over 2 GiB)."""
    server = servers(inflate=GIB, inflate_route=route)
    done = run_measured(["sweep", "--model", server.url, "--out", tmp_path / "out", "--exams", "1",
                         "--bootstrap", "0"], tmp_path / "home")
    proc = subprocess.CompletedProcess([], done["rc"], done["stdout"], done["stderr"])
    assert done["rc"] == 2
    one_line_error(proc, f"{server.url}{route} answered more than", "MiB (decoded)", "refused, not read whole")
    assert done["peak_kib"] * 1024 < 1.2 * GIB, f"peak {done['peak_kib'] / 2**20:.2f} GiB"
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("results.json"))


def test_the_bound_grows_with_the_request_and_a_normal_answer_is_read(servers, tmp_path):
    from fasteval.models.served.transport import ANSWER_FLOOR_BYTES, answer_limit

    assert answer_limit(0) == ANSWER_FLOOR_BYTES
    assert answer_limit(32, 384) < answer_limit(32) < answer_limit(64)
    assert answer_limit(32, 384) >= 32 * 384 * len(json.dumps(-1.2345678901234567e-05) + ", ")
    server = servers(dim=1024)
    proc = run_cli(["sweep", "--model", server.url, "--out", tmp_path / "out", "--exams", "1", "--bootstrap", "0"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr


# --- 2 and 3. no secret reaches any output, whoever wrote the text ------------------------------------------------
KEY, QUERY_KEY, PASSWORD = "sk-BEARER-7f3a9c", "QKEY-51d8e2", "PWD-0c4b7a"


def _everything_written(proc, root) -> str:
    files = [p.read_text(errors="replace") for p in root.rglob("*") if p.is_file() and p.stat().st_size < 2**24]
    return "\n".join([proc.stdout, proc.stderr, *files])


def test_bench_shows_only_the_public_url(servers, tmp_path):
    """`fasteval bench --model URL?api_key=...` printed the URL with its key, twice (item 2)."""
    server = servers()
    url = server.url.replace("://", f"://user:{PASSWORD}@") + f"?api_key={QUERY_KEY}"
    out = tmp_path / "out"
    out.mkdir()
    proc = run_cli(["bench", "--model", url, "--batch-sizes", "8", "--concurrency", "1", "--repeats", "1",
                    "--long-sentences", "0", "--exams", "none", "--json", out / "bench.json"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    assert f"fasteval bench: {server.url} on served" in proc.stdout
    written = _everything_written(proc, out)
    assert QUERY_KEY not in written and PASSWORD not in written and "user:" not in written
    assert json.loads((out / "bench.json").read_text())["model"] == server.url


def test_a_servers_echo_of_the_key_is_masked_on_the_terminal_in_drift_json_and_junit(servers, tmp_path):
    """A gateway whose error text repeats the request line and the Authorization header (item 3): the bearer key
    and each query value are masked wherever the text goes."""
    reference, candidate = servers(), servers(max_chars=40, echo=True)
    out = tmp_path / "out"
    url = candidate.url + f"?api_key={QUERY_KEY}"
    proc = run_cli(["drift", reference.url, url, "--bootstrap", "0", "--out", out, "--junit", tmp_path / "j.xml"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home"), "FASTEVAL_API_KEY": KEY})
    assert proc.returncode in (0, 1), proc.stderr
    written = _everything_written(proc, tmp_path) + (tmp_path / "j.xml").read_text()
    assert "maximum context length" in written and "Authorization: Bearer ***" in written, "the message is kept"
    assert KEY not in written and QUERY_KEY not in written
    assert any(KEY in headers.get("Authorization", "") for _, headers in candidate.seen), "the key was sent"


def test_credentials_a_server_echoes_into_its_model_names_reach_no_file_name_or_output(servers, tmp_path):
    """A gateway that names the model after the request (issue 66, item 2): its /models id and every answer's
    "model" repeat the query's key and the Authorization header (Basic: the password in base64). The sweep and
    the report keep and show neither, in no file's content, no file's or folder's name, and not on the terminal;
    the model is named by what is left of its id."""
    import base64

    server = servers(echo_in_names=True)
    url = server.url.replace("://", f"://alice:{PASSWORD}@") + f"?api_key={QUERY_KEY}"
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    out, report = tmp_path / "out", tmp_path / "report"
    swept = run_cli(["sweep", "--model", url, "--out", out, "--exams", "1", "--bootstrap", "0"], env=env)
    assert swept.returncode == 0, swept.stderr
    reported = run_cli(["report", out, "--out", report], env=env)
    assert reported.returncode == 0, reported.stderr
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert any(basic in headers.get("Authorization", "") for _, headers in server.seen), "Basic auth was sent"
    texts = _everything_written(swept, tmp_path / "out") + _everything_written(reported, report)
    names = "\n".join(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.parts[-1] != "home")
    for secret in (PASSWORD, QUERY_KEY, basic, basic[:12]):
        assert secret not in texts and secret not in names, secret
    assert "?" not in names and "=" not in names, names
    result = json.loads(next(out.rglob("results.json")).read_text())
    assert "fake-model" in json.dumps(result), "the model is still named by what is left of its id"


@pytest.mark.parametrize("debug", ["", "1"], ids=["plain", "FASTEVAL_DEBUG"])
def test_drift_against_a_deployment_that_answers_400_is_one_line_and_exit_2(debug, servers, tmp_path):
    """A deployment that refuses every request (a wrong model name): drift's base64 parity let the refusal through
    as an internal error, and under FASTEVAL_DEBUG=1 the traceback ended the process with 1, drift's "drifts"
    (issue 66, item 4). Now one line naming the refusal, exit 2, debug or not."""
    reference, candidate = servers(), servers(refuse=400)
    proc = run_cli(["drift", reference.url, candidate.url, "--bootstrap", "0"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home"), "FASTEVAL_DEBUG": debug})
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    one_line_error(proc, "No text could be embedded by both encoders (the candidate: ",
                   f"{candidate.url}/embeddings refused the request (HTTP 400", "does not exist")


# --- 4. the natural CI layout keeps its verdict and its JUnit file ------------------------------------------------
@pytest.mark.parametrize("earlier", [False, True], ids=["new-folder", "earlier-output"])
def test_drift_out_with_its_junit_inside_keeps_the_verdict_and_the_file(earlier, servers, tmp_path):
    """`drift --out O --junit O/junit.xml`: with O new the run exited 2 after it finished (the verdict lost); with O
    from an earlier run it exited 0 and junit.xml was gone (the folder replaced after the file was written)."""
    reference, candidate = servers(), servers(noise=0.9)  # another model: a drift, exit 1
    out = tmp_path / "O"
    args = ["drift", reference.url, candidate.url, "--bootstrap", "0", "--out", out, "--junit", out / "junit.xml"]
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    if earlier:
        assert run_cli(args, env=env).returncode == 1
        (out / "junit.xml").unlink()
    proc = run_cli(args, env=env)
    assert proc.returncode == 1, proc.stderr
    assert (out / "drift.json").is_file() and "<testsuite" in (out / "junit.xml").read_text()
    assert 'failures="' in (out / "junit.xml").read_text() and json.loads((out / "drift.json").read_text())
    clash = run_cli([*args[:-1], out / "drift.json"], env=env)
    one_line_error(clash, "is a file the drift report writes", "--junit")


# --- 5. int8 needs something to calibrate on -----------------------------------------------------------------------
def test_int8_calibrated_on_one_line_repeated_is_refused_naming_the_file(tiny_st_folder, tiny_encoder, fasteval_home,
                                                                        tmp_path):
    """1,000 copies of one line gave τ n/a, PACC 0.00, exit 0 and a numpy warning (item 5); two texts that embed
    the same (the tiny model lower-cases) leave every dimension without a range."""
    args = ["sweep", "--model", tiny_st_folder, "--exams", "1", "--bootstrap", "0", "--provider", "cpu",
            "--vector-quantization", "int8", "--calibration"]
    same = tmp_path / "same.txt"
    same.write_text("2 kilometers\n" * 1000)
    proc = run_cli([*args, same, "--out", tmp_path / "a"], env={"FASTEVAL_HOME": str(fasteval_home)})
    one_line_error(proc, f"the calibration file {same} has 1 (in 1000 lines)", "at least 2 distinct")
    cased = tmp_path / "cased.txt"
    cased.write_text("2 Kilometers\n2 KILOMETERS\n")
    proc = run_cli([*args, cased, "--out", tmp_path / "b"], env={"FASTEVAL_HOME": str(fasteval_home)})
    one_line_error(proc, f"int8's calibration on the calibration file {cased} gives 32 of 32 dimensions no range")
    assert "RuntimeWarning" not in proc.stderr and not list(tmp_path.rglob("results.json"))


# --- 8. a named pipe nothing writes to is named as the file it is -------------------------------------------------
def test_a_fifo_with_no_writer_is_one_line_naming_the_file(tmp_path):
    import os

    fifo = tmp_path / "quantities.fifo"
    os.mkfifo(fifo)
    proc = run_cli(["check", "--file", fifo, "--model", "none-needed"], env={"FASTEVAL_HOME": str(tmp_path / "h")})
    one_line_error(proc, f"The quantities file {fifo} is a named pipe (FIFO) that nothing had written to")


# --- 6 and 7. a receipt is an input from elsewhere -----------------------------------------------------------------
@pytest.fixture(scope="module")
def receipt(tiny_st_folder, fasteval_home, tmp_path_factory):
    path = tmp_path_factory.mktemp("receipt") / "ref.receipt"
    proc = run_cli(["drift", "--save-receipt", path, tiny_st_folder, "--provider", "cpu", "--bootstrap", "0", "-q",
                    "--no-invariance"], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    return path


def _members(source) -> dict:
    import io

    import numpy as np

    out = {}
    with np.load(source, allow_pickle=False) as data:
        for name in data.files:
            buf = io.BytesIO()
            np.save(buf, data[name])
            out[f"{name}.npy"] = buf.getvalue()
    return out


def _zip(dest, members: dict, compress: dict | None = None) -> None:
    import zipfile

    with zipfile.ZipFile(dest, "w") as out:
        for name, data in members.items():
            out.writestr(name, data, compress_type=(compress or {}).get(name, zipfile.ZIP_STORED))


def _with_meta(source, dest, change) -> None:
    import io

    import numpy as np

    members = _members(source)
    with np.load(source, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    buf = io.BytesIO()
    text = change(meta)
    np.save(buf, np.array(text if isinstance(text, str) else json.dumps(text)))
    members["meta.npy"] = buf.getvalue()
    _zip(dest, members)


def _drift(receipt_path, tiny_st_folder, home, timeout=120):
    return run_cli(["drift", receipt_path, tiny_st_folder, "--provider", "cpu", "--bootstrap", "0", "-q",
                    "--no-invariance"], env={"FASTEVAL_HOME": str(home)}, timeout=timeout)


def test_a_receipts_variant_names_follow_the_grammar_and_its_words_lose_control_characters(
        receipt, tiny_st_folder, fasteval_home, tmp_path):
    """A variant named "pooling=cls\\n::error title=x::pwned" wrote its own line into a CI log (item 6): refused;
    a name or identity with control characters is shown without them."""
    from fasteval.models.adapters.receipt import ReceiptEncoder
    from fasteval.models.loader import load_model
    from fasteval.core.results.drift_findings import VARIANT_NAME
    from fasteval.models.onnx.variants import pairs_of

    singles = load_model(str(tiny_st_folder), provider="cpu").variants()
    assert singles and all(VARIANT_NAME.fullmatch(v.name) for v in [*singles, *pairs_of(singles)])

    def forge(meta):
        meta["variants"]["names"][0] = "pooling=cls\n::error title=x::pwned"
        return meta

    _with_meta(receipt, tmp_path / "forged.receipt", forge)
    proc = _drift(tmp_path / "forged.receipt", tiny_st_folder, fasteval_home)
    line = one_line_error(proc, "names a variant", "not a setting=value of drift's diagnosis")
    assert "\n::error" not in proc.stdout + proc.stderr and "'pooling=cls::error title=x::pwned'" in line

    def rename(meta):
        meta["name"] = "tiny\n::error::x\x1b[31m\u202e"
        return meta

    _with_meta(receipt, tmp_path / "named.receipt", rename)
    assert ReceiptEncoder(tmp_path / "named.receipt").meta["name"] == "tiny::error::x[31m"


def test_a_receipts_members_and_meta_are_bounded_before_they_are_read(receipt, tiny_st_folder, fasteval_home,
                                                                      tmp_path):
    """Meta nested 200,000 deep was an internal error; 100,000 unknown members were opened one by one and then
    accepted; deflated zeros that inflate to gigabytes were read whole (item 7): each one line, exit 2, at once."""
    import zipfile

    _with_meta(receipt, tmp_path / "deep.receipt", lambda meta: "[" * 200_000 + "]" * 200_000)
    one_line_error(_drift(tmp_path / "deep.receipt", tiny_st_folder, fasteval_home), "meta nested deeper than 16")

    members = _members(receipt)
    members.update({f"junk{k}.npy": b"" for k in range(100_000)})
    _zip(tmp_path / "junk.receipt", members)
    proc = _drift(tmp_path / "junk.receipt", tiny_st_folder, fasteval_home, timeout=60)
    one_line_error(proc, "holds a member a receipt does not have ('junk0.npy')")

    members = _members(receipt)
    header = members["vectors.npy"][:128]  # numpy's header: declares the shape it holds; zeros after it
    members["vectors.npy"] = header + b"\0" * (2**28)
    _zip(tmp_path / "zeros.receipt", members, {"vectors.npy": zipfile.ZIP_DEFLATED})
    assert (tmp_path / "zeros.receipt").stat().st_size < 2**21
    proc = _drift(tmp_path / "zeros.receipt", tiny_st_folder, fasteval_home, timeout=60)
    one_line_error(proc, "holds vectors compressed", "to one, as no array of floats or text is")


# --- 15. token counts: which side counted what, and only where it matters ----------------------------------------
def test_token_counts_say_which_side_counted_what_and_only_beside_a_drift(servers, tiny_st_folder, tiny_encoder,
                                                                           fasteval_home, tmp_path):
    """A server whose prompt_tokens are characters, against the tiny model: the line names the server's count and the
    reference tokenizer's (it read "6 against 19", the reference first) and that the server counts characters; the
    same report that conforms shows no such line (it showed on a passing infinity run)."""
    from fasteval.core.report.drift import drift_text
    from fasteval.core.results.drift import DriftReport

    server = servers(count_characters=True, dim=32)
    out = tmp_path / "out"
    proc = run_cli(["drift", tiny_st_folder, server.url, "--provider", "cpu", "--bootstrap", "0", "--no-diagnose",
                    "--out", out], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 1, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("  token counts:")]
    assert ": the server " in line and ", the reference's tokenizer " in line and " against " not in line
    assert "the server's counts are the texts' characters" in line
    data = json.loads((out / "drift.json").read_text())
    example = data["token_counts"]["examples"][0]
    assert f"{example['text']!r}: the server {example['candidate_tokens']}, the reference's tokenizer " \
           f"{example['reference_tokens']}" in line
    class Conforming(DriftReport):  # the same report, had it conformed
        verdict = "conforms"

    assert "  token counts:" in drift_text(DriftReport.from_json(data))
    assert "token counts:" not in drift_text(Conforming.from_json(data))


# --- 19. small things a new user tripped on --------------------------------------------------------------------------
def test_a_local_drift_announces_no_base64_step_and_its_csv_says_which_groups_drifted(
        tiny_st_folder, tiny_cls_folder, fasteval_home, tmp_path):
    """Two local folders: no "compare base64" step (there is no server to ask); drift_groups.csv has a drifted
    column (failed stays why a group could not be embedded), and no drifted group shows "0%" below."""
    import csv

    out = tmp_path / "out"
    proc = run_cli(["drift", tiny_st_folder, tiny_cls_folder, "--provider", "cpu", "--bootstrap", "0",
                    "--no-diagnose", "--out", out], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 1, proc.stderr
    assert "base64" not in proc.stderr
    rows = list(csv.DictReader((out / "drift_groups.csv").open()))
    drifted = [r for r in rows if r["drifted"] == "True"]
    assert drifted and all(r["failed"] == "" for r in drifted)
    assert {r["group"] for r in drifted} <= {line.split()[0] for line in proc.stdout.splitlines()[1:] if line}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in {r["group"] for r in drifted}:
            assert "  0%  " not in line, line


# --- 14. what to do, in every place the diagnosis shows ---------------------------------------------------------
def test_the_several_candidates_table_names_the_cause_and_shows_the_why_whole(tiny_st_folder, tiny_cls_folder,
                                                                              tiny_bare_folder, fasteval_home,
                                                                              tmp_path):
    """The why column was cut at 160 characters, at a word (issue 56), and still read `length…` to a CI user: it is
    whole now, the last column, as ladder.csv has it (issue 66, item 12)."""
    out = tmp_path / "out"
    proc = run_cli(["drift", tiny_st_folder, tiny_cls_folder, tiny_bare_folder, "--provider", "cpu", "--bootstrap",
                    "0", "--no-invariance", "--out", out], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 1, proc.stderr
    table = proc.stdout[proc.stdout.index("candidates against"):]
    row = next(line for line in table.splitlines() if line.strip().startswith(str(tiny_cls_folder)))
    assert "embeds like pooling=cls;" in row
    import csv

    rows = {r["candidate"]: r for r in csv.DictReader((out / "ladder.csv").open())}
    assert any(r["diagnosis"] == "pooling=cls" for r in rows.values()), rows
    reasons = next(r["reasons"] for r in rows.values() if r["diagnosis"] == "pooling=cls")
    assert row.endswith(f"embeds like pooling=cls; {reasons}") and not row.endswith("…"), (row, reasons)


# --- 16. a run in a store's vector form is named so ---------------------------------------------------------------
def test_runs_in_a_vector_form_are_labelled_and_sorted_by_number(tiny_st_folder, tiny_encoder, fasteval_home,
                                                                 tmp_path):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--model", tiny_st_folder, "--exams", "1", "--bootstrap", "0", "--provider", "cpu", "--out",
              tmp_path / "res"]
    for dims in ("8", "16", "24"):
        proc = run_cli(["sweep", *common, "--dimensions", dims], env=env)
        assert proc.returncode == 0, proc.stderr
        assert f"tiny-bert [{dims} dims]" in proc.stdout, proc.stdout[-800:]
    check = run_cli(["check", "2 kilometers", "2000 meters", "2 meters", "--model", tiny_st_folder,
                     "--vector-quantization", "binary"], env=env)
    assert check.returncode == 0 and check.stdout.startswith("fasteval check: tiny-bert [binary], "), check.stdout
    ladder = run_cli(["sweep", "--model", tiny_st_folder, "--exams", "1", "--bootstrap", "0", "--provider", "cpu",
                      "--ladder", "vectors", "--out", tmp_path / "ladder"], env=env)
    assert ladder.returncode == 0, ladder.stderr
    assert "fasteval: tiny-bert [int8]: a rung done" in ladder.stdout + ladder.stderr
    report = run_cli(["report", tmp_path / "res", "--out", tmp_path / "rep", "--no-png"], env=env)
    assert report.returncode == 0, report.stderr
    table1 = (tmp_path / "rep" / "table1.md").read_text()
    others = [int(line.split("[")[1].split()[0]) for line in table1.splitlines() if "└ tiny-bert [" in line]
    assert len(others) == 2 and others == sorted(others), table1  # 8 before 16 (as text, "16" came first)


# --- 17. the report compares a store's binary run, and its words say what they mean ------------------------------
def test_the_report_compares_binary_runs_and_skips_nothing_for_their_similarity(tiny_st_folder, tiny_cls_folder,
                                                                                tiny_encoder, fasteval_home,
                                                                                tmp_path):
    """A binary run is scored by Hamming similarity: the report skipped it from its comparison ("compare skipped
    ... hamming"), though the ladder gives its Δτ; it is compared on the protocol's cells now."""
    from fasteval.core.report.compare import comparable, compare
    from fasteval.core.report.entries import load_results

    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--exams", "1", "--bootstrap", "0", "--provider", "cpu", "--out", tmp_path / "res"]
    for args in (["--model", tiny_st_folder], ["--model", tiny_cls_folder],
                 ["--model", tiny_st_folder, "--vector-quantization", "binary"]):
        assert run_cli(["sweep", *args, *common], env=env).returncode == 0
    entries = load_results(tmp_path / "res")
    members, skipped, group = comparable(entries)
    assert len(members) == 3 and skipped == [] and group.endswith(", similarity cos, hamming"), group
    runs = compare(entries, 200).runs_table()
    assert runs is not None and "binary" in runs.markdown()
    report = run_cli(["report", tmp_path / "res", "--out", tmp_path / "rep", "--no-png"], env=env)
    assert report.returncode == 0 and "compare skipped" not in report.stdout + report.stderr
    sources = (tmp_path / "rep" / "sources.md").read_text()
    assert "Quantities normalized (--normalize-quantities)" in sources and "| Normalized |" not in sources
    assert "| binary |" in sources and "| float |" in sources


# --- 18. the long steps say what they do --------------------------------------------------------------------------
def test_save_receipt_and_report_show_their_progress(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    """--save-receipt (half a minute with the exports its variants need) and report printed nothing until done."""
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    proc = run_cli(["drift", "--save-receipt", tmp_path / "r.receipt", tiny_st_folder, "--provider", "cpu",
                    "--bootstrap", "0"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "fasteval: receipt: embed tiny-bert" in proc.stderr
    assert "fasteval: receipt: variant 1 of " in proc.stderr and ": pooling=" in proc.stderr
    assert run_cli(["sweep", "--model", tiny_st_folder, "--exams", "1", "--bootstrap", "0", "--out",
                    tmp_path / "res"], env=env).returncode == 0
    report = run_cli(["report", tmp_path / "res", "--out", tmp_path / "rep"], env=env)
    assert report.returncode == 0, report.stderr
    for step in ("read the results under", "tables of 1 result(s)", "figures of tiny-bert (1 of 1)", "write "):
        assert f"fasteval: report: {step}" in report.stderr, report.stderr


def test_a_text_in_another_unicode_form_does_not_look_like_its_twin():
    """The worst-texts lines showed 'café' twice, NFC and NFD, alike (item 19)."""
    import unicodedata

    from fasteval.core.results.drift_findings import pair_text, shown_text

    nfc, nfd = "café", unicodedata.normalize("NFD", "café")
    assert shown_text(nfc) == "'café'" and shown_text(nfd) == "'cafe\\u0301' (NFD)" != shown_text(nfc)
    assert "(NFC)" in pair_text(nfc, nfd) and "(NFD)" in pair_text(nfc, nfd)


def test_a_candidate_of_another_dimension_is_refused_before_the_receipts_rows_are_read(receipt, servers, tmp_path):
    """The receipt's headers say its dimension: a candidate of another one is refused before its rows are read (here
    rows with NaN, which reading them would refuse instead; item 7)."""
    import numpy as np

    with np.load(receipt, allow_pickle=False) as data:
        held = {k: data[k] for k in data.files}
    held["vectors"] = held["vectors"].copy()
    held["vectors"][0, 0] = np.nan
    with open(tmp_path / "nan.receipt", "wb") as f:
        np.savez(f, **held)
    other = servers(dim=16)
    proc = run_cli(["drift", tmp_path / "nan.receipt", other.url, "--bootstrap", "0", "--no-invariance"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")})
    one_line_error(proc, "embeds in 16 dimensions, the reference", "in 32: they are different models")
    assert other.texts == 1, "one text asked of the candidate"
    same = servers(dim=32)
    proc = run_cli(["drift", tmp_path / "nan.receipt", same.url, "--bootstrap", "0", "--no-invariance"],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")})
    one_line_error(proc, "1 embedding(s) with NaN or inf")
