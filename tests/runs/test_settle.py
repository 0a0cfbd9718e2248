"""A result keyed by what actually ran (issue 46): on a machine where a driver loads and onnxruntime lists CUDA but the
session falls back to the CPU, the plan settles before any key is read. A stand-in says CUDA until it is started,
then runs on the CPU: a rerun is skipped, a CUDA entry of the embedding cache is never read for a CPU result (nor
written with CPU rows), and drift saves what it embedded under the key that ran."""
from __future__ import annotations

import numpy as np

from fasteval.core.cache import EmbeddingCache
from fasteval.core.embeddings import EmbeddingTable
from fasteval.core.plan import plan, scoring
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

from fakes import CountingEncoder


class FallsBack(CountingEncoder):
    """Planned for CUDA; started, its session falls back to the CPU (cuDNN missing, say)."""

    def __init__(self, name: str, lands_on: str = "cpu", **kw):
        super().__init__(name, **kw)
        self.info = {**self.info, "provider": "cuda"}
        self.provider, self.lands_on, self.started = "cuda", lands_on, 0

    def settle(self) -> dict:
        if self.started == 0:
            self.started, self.provider = 1, self.lands_on
        return self.settled()

    def settled(self) -> dict:
        return {"provider": self.provider}

    def encode(self, texts):
        self.settle()
        return super().encode(texts)


def _sweep(tmp_path, made: list, lands_on: str = "cpu", exams=(1,)):
    def loader(name, **options):
        made.append(FallsBack(name, lands_on=lands_on))
        return made[-1]

    return run_sweep([Job("org/falls-back", exams=exams)], tmp_path / "out", loader, cache_root=tmp_path / "home")


def test_a_sweep_that_fell_back_is_skipped_on_rerun(tmp_path):
    made: list = []
    first = _sweep(tmp_path, made)[0]
    assert first.status == "done" and first.result.settings["provider"] == "cpu"
    second = _sweep(tmp_path, made)[0]
    assert second.status == "skipped" and second.path == first.path, second
    assert made[1].calls == [], "nothing embedded again"


def test_a_cuda_cache_entry_is_never_read_for_a_cpu_result(tmp_path):
    """A partial CUDA entry (a GPU run stopped by Ctrl-C), its vectors perturbed: the CPU result is the CPU's own
    numbers, the CUDA entry is left as it was, and the CPU entry holds the CPU's rows only."""
    chosen = scoring(exams=(1,))
    cuda = plan(FallsBack("org/falls-back"), chosen)
    assert cuda.settings["provider"] == "cuda"
    texts = sorted({t for g in cuda.groups() for t in g})[:300]
    perturbed = EmbeddingTable()
    rng = np.random.default_rng(0)
    perturbed.add(texts, rng.normal(size=(len(texts), 16)).astype(np.float32))
    cache = EmbeddingCache(tmp_path / "home")
    cache.save(cuda.embedding_key, perturbed)
    before = cache.path(cuda.embedding_key).read_bytes()

    made: list = []
    result = _sweep(tmp_path, made)[0].result
    clean = plan(CountingEncoder("org/falls-back"), chosen)
    from fasteval.core.plan import run

    reference = run(clean)
    assert [(c.tau, c.pacc) for c in result.exams["exam1"].cells] == \
        [(c.tau, c.pacc) for c in reference.exams["exam1"].cells]
    assert cache.path(cuda.embedding_key).read_bytes() == before, "the CUDA entry was neither read nor replaced"
    cpu_key = plan(made[0], chosen).settled().embedding_key
    assert cpu_key != cuda.embedding_key
    cpu_table = cache.load(cpu_key)
    rows = dict(cpu_table.items())
    fresh = CountingEncoder("org/falls-back").encode(texts[:5])
    np.testing.assert_allclose(np.stack([rows[t] for t in texts[:5]]),
                               fresh / np.linalg.norm(fresh, axis=1, keepdims=True), rtol=1e-6)


def test_a_gpu_that_holds_keeps_the_cuda_key(tmp_path):
    made: list = []
    done = _sweep(tmp_path, made, lands_on="cuda")[0]
    assert done.status == "done" and done.result.settings["provider"] == "cuda"
    assert _sweep(tmp_path, made, lands_on="cuda")[0].status == "skipped"


def test_drift_saves_what_it_embedded_under_the_key_that_ran(tmp_path):
    from fasteval.core.runs.drift.gate import drift

    reference = FallsBack("org/falls-back")
    cuda_key = plan(FallsBack("org/falls-back"), scoring(exams=(1,), bootstrap=0)).embedding_key
    drift(reference, CountingEncoder("org/other"), cache_root=tmp_path / "home", invariance=False, resamples=0)
    cache = EmbeddingCache(tmp_path / "home")
    cpu_key = plan(reference, scoring(exams=(1,), bootstrap=0)).settled().embedding_key
    assert cpu_key != cuda_key
    assert cache.path(cpu_key).is_file() and not cache.path(cuda_key).exists()


def test_an_encoders_own_info_is_keyed(tmp_path):
    """Two encoders named alike whose info differs only in a setting no list names (a user's revision): other
    result and embedding keys, and a sweep runs both (v2 was skipped as already done). Names and paths never enter
    a key, and an info without such a setting keys as it always did."""
    class Revised(CountingEncoder):
        def __init__(self, name, revision):
            super().__init__(name)
            self.info = {**self.info, "revision": revision}

    chosen = scoring(exams=(1,))
    v1, v2 = (plan(Revised("org/mine", r), chosen) for r in ("v1", "v2"))
    assert v1.key != v2.key and v1.embedding_key != v2.embedding_key
    plain = plan(CountingEncoder("org/mine"), chosen)
    renamed = CountingEncoder("org/mine")
    renamed.info = {**renamed.info, "source": "/elsewhere/mine", "model": "another name"}
    assert plan(renamed, chosen).key == plain.key, "a path or a name is not a setting"
    outcomes = [run_sweep([Job("org/mine", exams=(1,))], tmp_path / "out", lambda name, r=r, **o: Revised(name, r),
        cache_root=False)[0]
                for r in ("v1", "v2")]
    assert [o.status for o in outcomes] == ["done", "done"] and outcomes[0].path != outcomes[1].path


def test_a_result_records_the_machine_it_ran_on_outside_its_key(tmp_path):
    """Provenance: the CPU and its SIMD flags, the onnxruntime build and the provider that ran (on CUDA the GPU,
    driver, CUDA, cuDNN and TF32), in results.json and the report's sources table, never in the key."""
    from fasteval.core.report.cross_tables import machine_words
    from fasteval.core.results.read import load_result
    from fasteval.models.machine import provenance

    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), None)
    made: list = []
    outcome = _sweep(tmp_path, made)[0]
    machine = outcome.result.machine
    assert machine["provider"] == "cpu" and (cpu is None or machine["cpu"] == cpu) and "simd" in machine
    assert "gpu" not in machine and machine.get("onnxruntime", "").startswith("onnxruntime")
    loaded = load_result(outcome.path / "results.json")
    assert loaded.machine == machine and "machine" not in loaded.settings
    moved = dict(outcome.result.settings)
    assert outcome.path.name == moved["key"]
    gpu = provenance("cuda")
    assert gpu["provider"] == "cuda" and gpu["tf32"] == "off" and {"gpu", "driver", "cuda", "cudnn"} <= set(gpu)
    assert machine_words({**gpu, "gpu": "NVIDIA H200", "driver": "580.159.04", "cuda": "13.0"}) == \
        "NVIDIA H200, driver 580.159.04, CUDA 13.0, TF32 off"
    assert machine_words(machine).startswith(machine["cpu"])


def test_one_rule_for_the_cache_root(tmp_path, monkeypatch):
    """None is this machine's FASTEVAL_HOME (the CLI no longer decides it), False no cache, a path that path: the
    same in a sweep and in drift."""
    from fasteval.core.runs.drift.gate import drift
    from fasteval.core.cache import embedding_cache_root as root

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    assert (root(None), root(False), root(tmp_path / "x")) == (tmp_path / "home", None, tmp_path / "x")
    run_sweep([Job("org/cached", exams=(1,))], tmp_path / "a", lambda name, **o: CountingEncoder(name))
    assert len(list((tmp_path / "home" / "embeddings").glob("*.npz"))) == 1
    run_sweep([Job("org/uncached", exams=(1,))], tmp_path / "b", lambda name, **o: CountingEncoder(name),
              cache_root=False)
    drift(CountingEncoder("org/ref-off"), CountingEncoder("org/cand"), cache_root=False, invariance=False,
          resamples=0)
    assert len(list((tmp_path / "home" / "embeddings").glob("*.npz"))) == 1
    drift(CountingEncoder("org/ref-on"), CountingEncoder("org/cand"), invariance=False, resamples=0)
    assert len(list((tmp_path / "home" / "embeddings").glob("*.npz"))) == 3, "both sides saved"


def test_the_library_decides_what_the_cli_did(tiny_st_folder, fasteval_home):
    """The Ray memory estimate and a derived export's drift report are the library's: run_sweep_ray asks Ray for
    ``peak_memory`` by default (a registry model's card size before its download), and ``export_drift`` is what
    `fasteval export --dtype int8` prints."""
    from fasteval.core.runs.drift.gate import export_drift
    from fasteval.core.runs.ray_executor import peak_memory
    from fasteval.models.loader import export_model
    from fasteval.models.sources.needs import needs_of

    assert peak_memory(Job("Qwen3-Embedding-8B")) == needs_of("Qwen3-Embedding-8B").peak_bytes > 80 * 2**30
    assert peak_memory(Job("http://127.0.0.1:1/v1")) is None, "a served model needs no memory here"
    report = export_drift(str(tiny_st_folder), export_model(str(tiny_st_folder), dtype="int8"))
    assert report.texts > 1000 and "conformance" not in report.groups and 0.5 < report.mean_cosine < 1


def test_drifts_identity_names_the_provider_each_side_ran_on(tmp_path):
    """A side planned for CUDA whose session fell back to the CPU: drift.json's identity says cpu (the plan as it
    ran, not the one made), beside its dtype; the terminal's identity line says so too."""
    from fasteval.core.report.drift import drift_text
    from fasteval.core.runs.drift.gate import drift

    report = drift(FallsBack("org/falls-back"), FallsBack("org/also-falls-back", lands_on="cuda"),
                   cache_root=False, invariance=False, resamples=0, conformance=False)
    sides = report.to_json()["identity"]
    assert (sides["reference"]["provider"], sides["candidate"]["provider"]) == ("cpu", "cuda")
    assert sides["reference"]["dtype"] == "fp32" and sides["reference"]["kind"] == "local"
    line = next(ln for ln in drift_text(report).splitlines() if "identity:" in ln)
    assert "'org/falls-back' (local, f32, on cpu" in line and "'org/also-falls-back' (local, f32, on cuda" in line


def test_a_library_evaluation_that_fell_back_records_what_ran():
    # fasteval.evaluate plans for CUDA; the session falls back: the result's settings and machine both say cpu
    from fasteval.core.plan import evaluate

    result = evaluate(FallsBack("org/falls-back"), exams=[1], bootstrap=0)
    assert result.settings["provider"] == "cpu"
    assert result.machine["provider"] == "cpu", result.machine
