"""served: fasteval's HTTP client (``--model URL``) against MTEB's OpenAI-compatible wrapper
(``mteb.models.openai_wrappers.OpenAIAPIEncodeWrapper``, 32 texts a request, one request at a time) on the same
real server (infinity serving the model's folder on 127.0.0.1, started from its own virtual environment as the
tests start it) and the same texts: every distinct text of the paper's Exams 1 and 2, then 256 long sentences.
Both clients' embeddings are held equal before anything is timed."""
from __future__ import annotations

import sys

from harness import HERE, Ctx, Line, alternate, med

sys.path.insert(0, str(HERE.parent / "tests"))


def bench_served(ctx: Ctx) -> list[Line]:
    import numpy as np

    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.models.served import ServedEncoder
    from servers import SERVED_NAME, start_infinity

    lines = []
    with start_infinity(ctx.folder, ctx.tmp, url_prefix="/v1") as url:
        root = url[: -len("/v1")]
        mteb_client = _mteb_wrapper(root, SERVED_NAME)
        runs = 3 if ctx.quick else 5
        for name, texts in (("paper", paper_texts()), ("long", long_sentences(64 if ctx.quick else 256))):
            for concurrency in (1, 4):
                ours = ServedEncoder(url, batch_size=32, concurrency=concurrency)
                a, b = ours.encode(texts), mteb_client(texts)
                a /= np.linalg.norm(a, axis=1, keepdims=True)
                b /= np.linalg.norm(b, axis=1, keepdims=True)
                worst = float(np.abs(a - b).max())
                tf, tg = alternate(lambda: ours.encode(texts), lambda: mteb_client(texts), runs)
                ours.close()
                lines.append(Line(
                    "served", f"{len(texts)} {name} texts from infinity: fasteval's client, 32 a request, "
                              f"concurrency {concurrency} (texts/s {len(texts) / med(tf):.0f} against "
                              f"{len(texts) / med(tg):.0f})",
                    med(tf), med(tg), "MTEB OpenAIAPIEncodeWrapper (sequential, 32 a request)",
                    f"max |Δ| of the normalised embeddings {worst:.1e}", worst < 1e-5,
                    detail={"texts": len(texts), "concurrency": concurrency, "fasteval_runs": tf, "peer_runs": tg,
                            "url": url}))
    return lines


def _mteb_wrapper(root: str, model: str):
    """texts -> embeddings through MTEB's wrapper, as a harness calls it (a DataLoader of 32 texts a batch)."""
    import numpy as np
    from datasets import Dataset
    from mteb._create_dataloaders import create_dataloader
    from mteb.models.openai_wrappers import OpenAIAPIEncodeWrapper

    import fasteval

    wrapper = OpenAIAPIEncodeWrapper(endpoint_url=root, model_name=model, use_chat_template=False)
    meta = fasteval.mteb.tasks(["PhysScoreMeasurementGeometry"])[0].metadata

    def encode(texts: list[str]) -> np.ndarray:
        loader = create_dataloader(Dataset.from_dict({"text": list(texts)}), task_metadata=meta, input_column="text",
                                   batch_size=32)
        out = wrapper.encode(loader, task_metadata=meta, hf_split="test", hf_subset="default", prompt_type=None,
                             show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    return encode
