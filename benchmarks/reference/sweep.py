"""A straightforward implementation of the paper protocol (core/protocol/PROTOCOL.md) with the usual tools:
sentence-transformers (torch, CPU), scipy.stats.kendalltau, RapidFuzz and scikit-learn RidgeCV.

This is the peer `fasteval sweep` is timed against (benchmarks/run.py runs it in a cold process). It is
written from PROTOCOL.md alone and shares no code with fasteval's exams: the strings, grids, seeds and
splits are regenerated here. One liberty over the notebook: an encode call of a list already encoded
(Exam 3 re-embeds Exam 1's cells; two conversion pairs share their A side) is answered from a dict, which
gives the same vectors and spares the peer the notebook's duplicate work.

    python benchmarks/reference/sweep.py MODEL_FOLDER [--json OUT.json] [--device cpu|cuda]

Prints the Table 1 row, the Exam 2 pivot and the Exam 3 means, and writes every number plus per-phase
timings as JSON.
"""
from __future__ import annotations

import time

_T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from rapidfuzz.distance import Levenshtein  # noqa: E402
from scipy.ndimage import gaussian_filter1d  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sklearn.linear_model import RidgeCV  # noqa: E402
from sklearn.metrics.pairwise import cosine_similarity  # noqa: E402

QUANTITIES = ["meter", "kilogram", "liter", "second"]
RANGES = {
    "local_0_10": np.arange(0, 10.5, 0.5),
    "medium_0_1000": np.arange(0, 1001, 50),
    "log_1_100k": np.unique(np.round(np.logspace(0, 5, 25))).astype(int),
    "sign_split": np.arange(-100, 101, 10),
    "scientific": np.logspace(-6, 6, 25),
}
DIGITS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "100"]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "one-hundred"]
CONVERSIONS = [("meter", "centimeter", lambda v: v * 100), ("meter", "millimeter", lambda v: v * 1000),
               ("meter", "kilometer", lambda v: v / 1000), ("kilogram", "gram", lambda v: v * 1000),
               ("gram", "milligram", lambda v: v * 1000), ("kilogram", "ton", lambda v: v / 1000),
               ("liter", "milliliter", lambda v: v * 1000), ("liter", "gallon", lambda v: v * 3.785),
               ("second", "millisecond", lambda v: v * 1000), ("minute", "second", lambda v: v * 60),
               ("hour", "minute", lambda v: v * 60)]
ALPHAS = np.logspace(-2, 4, 13)


def phrase(value, unit, range_name=""):
    if range_name == "scientific":
        return f"{value:.0e} {unit}"
    return f"{value:g} {unit if abs(value) == 1 else unit + 's'}"


class Embedder:
    def __init__(self, folder, device="cpu"):
        self.model = SentenceTransformer(folder, device=device).float()
        self.memo = {}

    def __call__(self, texts):
        key = tuple(texts)
        if key not in self.memo:
            self.memo[key] = self.model.encode(list(texts), normalize_embeddings=True)
        return self.memo[key]


def exam1(embed):
    cells = []
    for q in QUANTITIES:
        for r, values in RANGES.items():
            emb = embed([phrase(float(v), q, r) for v in values])
            s = cosine_similarity(emb)[0]
            tau = kendalltau(values, -s).statistic
            n = len(values)
            correct = sum(s[i] > s[j] for i in range(n) for j in range(i + 1, n))
            cells.append({"unit": q, "range": r, "kendall": float(tau), "pairwise": correct / (n * (n - 1) / 2)})
    digits_words = {}
    for q in QUANTITIES:
        digits_words[q] = cosine_similarity(embed([f"{w} {q}" for w in WORDS]), embed([f"{d} {q}" for d in DIGITS]))
    curves = []
    xs = np.logspace(-2, 3, 40)
    for a, b, convert in CONVERSIONS:
        ea = embed([phrase(float(x), a) for x in xs]).astype(np.float32)
        eb = embed([phrase(float(convert(x)), b) for x in xs]).astype(np.float32)
        ea /= np.linalg.norm(ea, axis=1, keepdims=True)
        eb /= np.linalg.norm(eb, axis=1, keepdims=True)
        curves.append(gaussian_filter1d((ea * eb).sum(axis=1), sigma=0.8))
    tau = np.mean([c["kendall"] for c in cells]) * 100
    pacc = np.mean([c["pairwise"] for c in cells]) * 100
    return {"cells": cells, "table1": {"tau": float(tau), "pacc": float(pacc), "avg": float((tau + pacc) / 2)}}


def exam2(embed, tokenizer):
    rng = random.Random(12345)
    floats = [round(rng.uniform(-1000, 1000), 5) for _ in range(50)]
    ints = [rng.randint(-1000, 1000) for _ in range(50)]
    texts = [f"{v:.5f}" for v in floats] + [str(v) for v in ints]
    values = [float(v) for v in floats + ints]
    kinds = ["float"] * 50 + ["int"] * 50
    signs = ["positive" if v >= 0 else "negative" for v in values]
    emb = embed(texts).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sims = emb @ emb.T
    tokens = [tokenizer.encode(t, add_special_tokens=False) for t in texts]
    pairs = [(i, j) for i in range(100) for j in range(i + 1, 100)]
    sim = np.array([sims[i, j] for i, j in pairs])
    dist = {"char_lev": np.array([Levenshtein.distance(texts[i], texts[j]) for i, j in pairs], dtype=float),
            "token_lev": np.array([Levenshtein.distance(tokens[i], tokens[j]) for i, j in pairs], dtype=float),
            "num_dist": np.array([abs(values[i] - values[j]) for i, j in pairs])}
    labels = {"overall": ["all"] * len(pairs),
              "type_pair": [f"{kinds[i]}-{kinds[j]}" for i, j in pairs],
              "same_sign": [str(signs[i] == signs[j]) for i, j in pairs],
              "sign_pair": [f"{signs[i]}-{signs[j]}" for i, j in pairs]}
    rows = []
    for group_type, groups in labels.items():
        groups = np.array(groups)
        for group in sorted(set(groups)):
            mask = groups == group
            for ref in ("char_lev", "token_lev", "num_dist"):
                tau = kendalltau(sim[mask], -dist[ref][mask]).statistic
                rows.append({"group_type": group_type, "group": group, "reference": ref, "tau": float(tau),
                             "n_pairs": int(mask.sum())})
    pivot = {ref: {r["group"]: round(r["tau"] * 100, 1) for r in rows if r["reference"] == ref
                   and r["group"] in ("all", "float-float", "float-int", "int-int")}
             for ref in ("char_lev", "num_dist", "token_lev")}
    return {"rows": rows, "pivot": pivot}


def split(n, s):
    perm = np.random.default_rng(12345 + s).permutation(n)
    n_test = min(max(4, round(0.35 * n)), n - 3)
    return np.sort(perm[:n_test]), np.sort(perm[n_test:])


def pairwise_accuracy(d, score):
    correct, total = 0, 0
    for i in range(len(d)):
        for j in range(i + 1, len(d)):
            correct += (score[i] > score[j]) if d[i] < d[j] else (score[i] < score[j])
            total += 1
    return correct / total


def exam3(embed):
    rows = []
    for r, values in RANGES.items():
        values = values.astype(float)
        emb = {q: embed([phrase(float(v), q, r) for v in values]).astype(np.float32) for q in QUANTITIES}
        per = {q: {"tp": [], "pp": [], "tc": [], "pc": []} for q in QUANTITIES}
        for s in range(5):
            test, train = split(len(values), s)
            a, b = np.triu_indices(len(train), k=1)
            a, b = train[a], train[b]
            X = np.concatenate([np.abs(emb[q][a] - emb[q][b]) for q in QUANTITIES])
            y = np.tile(np.log1p(np.abs(values[a] - values[b])), len(QUANTITIES))
            probe = RidgeCV(alphas=ALPHAS).fit(X, y)
            for q in QUANTITIES:
                taus_p, taus_c, pacc_p, pacc_c = [], [], [], []
                for anchor in test:
                    others = test[test != anchor]
                    d = np.abs(values[others] - values[anchor])
                    probe_score = -probe.predict(np.abs(emb[q][others] - emb[q][anchor]))
                    cos_score = emb[q][others] @ emb[q][anchor]
                    taus_p.append(kendalltau(d, -probe_score).statistic)
                    taus_c.append(kendalltau(d, -cos_score).statistic)
                    pacc_p.append(pairwise_accuracy(d, probe_score))
                    pacc_c.append(pairwise_accuracy(d, cos_score))
                per[q]["tp"].append(np.nanmean(taus_p))
                per[q]["tc"].append(np.nanmean(taus_c))
                per[q]["pp"].append(np.mean(pacc_p))
                per[q]["pc"].append(np.mean(pacc_c))
        for q in QUANTITIES:
            rows.append({"unit": q, "range": r, "kendall": float(np.mean(per[q]["tp"])),
                         "pairwise": float(np.mean(per[q]["pp"])), "kendall_cosine": float(np.mean(per[q]["tc"])),
                         "pairwise_cosine": float(np.mean(per[q]["pc"]))})
    summary = {f"{k}_mean": float(np.mean([row[k] for row in rows]))
               for k in ("kendall", "pairwise", "kendall_cosine", "pairwise_cosine")}
    return {"rows": rows, "summary": summary}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_folder")
    parser.add_argument("--json", default=None)
    parser.add_argument("--device", default="cpu", help="torch device (the notebook ran on cuda)")
    args = parser.parse_args(argv)
    timings = {"import": time.perf_counter() - _T0}
    start = time.perf_counter()
    embed = Embedder(args.model_folder, args.device)
    timings["load"] = time.perf_counter() - start
    out = {}
    for name, run in (("exam1", lambda: exam1(embed)), ("exam2", lambda: exam2(embed, embed.model.tokenizer)),
                      ("exam3", lambda: exam3(embed))):
        start = time.perf_counter()
        out[name] = run()
        timings[name] = time.perf_counter() - start
    out["timings"] = timings
    t1 = out["exam1"]["table1"]
    print(f"Table 1 row (x100): tau {t1['tau']:.2f}  PACC {t1['pacc']:.2f}  AVG {t1['avg']:.2f}")
    print("Exam 2 pivot (tau x100):", json.dumps(out["exam2"]["pivot"]))
    print("Exam 3 means:", json.dumps({k: round(v, 3) for k, v in out["exam3"]["summary"].items()}))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
