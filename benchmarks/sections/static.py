"""static: a static embedding model (the wheel-shipped one of tokenlearn-static-model 0.1.1: an int8 table,
vocabulary-quantized, 64 dimensions) through fasteval against model2vec's own encode, on the paper's distinct texts
(texts/s, the same texts, the same vectors); and `fasteval sweep` of it in a cold process against the embedding alone,
which shows what the rest of a run costs when the embedding is nearly free."""
from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from ..harness import Ctx, Line, alternate, fasteval_cmd, med


def bench_static(ctx: Ctx) -> list[Line]:
    import numpy as np
    import static_model
    from model2vec import StaticModel

    from fasteval.core.protocol import exam1_groups, exam2_groups
    from fasteval.models.static import StaticEncoder

    folder = Path(static_model.__file__).resolve().parent / "model"
    texts = sorted({t for g in exam1_groups() + exam2_groups() for t in g})
    ours, theirs = StaticEncoder(folder), StaticModel.from_pretrained(str(folder), force_download=False)
    runs = 5 if ctx.quick else 15
    tf, tg = alternate(lambda: ours.encode(texts), lambda: theirs.encode(texts), runs)
    same = bool(np.array_equal(ours.encode(texts), theirs.encode(texts)))
    lines = [Line("static", f"encode {len(texts):,} distinct paper texts: fasteval's static encoder against "
                            "model2vec's own encode (texts/s: "
                            f"{len(texts) / med(tf):,.0f} vs {len(texts) / med(tg):,.0f})",
                  med(tf), med(tg), "model2vec 0.10 StaticModel.encode", "vectors equal" if same else "vectors differ",
                  same, None, "", {"fasteval": tf, "peer": tg})]
    walls = []
    for _ in range(2 if ctx.quick else 3):
        with tempfile.TemporaryDirectory() as home:
            started = time.perf_counter()
            proc = subprocess.run([*fasteval_cmd(), "sweep", "--model", str(folder), "--out", f"{home}/out",
                                   "--bootstrap", "0", "--quiet"], capture_output=True, text=True,
                                  env={**ctx.env(), "FASTEVAL_HOME": home}, timeout=600)
            walls.append(time.perf_counter() - started)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-500:])
    embed = med(tf)
    lines.append(Line("static", "a cold `fasteval sweep` of the static model (three exams, no bootstrap) against "
                                f"its embedding alone: the rest of a run is {med(walls) - embed:.2f} s",
                      med(walls), embed, "the embedding alone (in process)", "", None, None, "",
                      {"fasteval": walls, "peer": tf}))
    return lines
