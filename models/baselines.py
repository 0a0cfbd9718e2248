"""Surface-form baselines: encoders that see only a text's characters, never its meaning. What they score is what
string similarity alone earns on the exams (a model's τ read beside them, not only beside the random baseline).

- ``ByteCounts``: a text as the counts of its UTF-8 bytes (256 dimensions);
- ``CharTrigrams``: character 3-gram TF-IDF, scikit-learn's ``TfidfVectorizer(analyzer="char", ngram_range=(3, 3),
  lowercase=False)`` fitted on a stated corpus (the exams' own texts), each row L2-normalised; a 3-gram the corpus
  lacks is left out, as a fitted vectorizer leaves it.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np


# The baselines' own version: a change to either encoder changes it, so nothing kept of them is read again.
VERSION = "1"


class ByteCounts:
    """The counts of each of a text's UTF-8 bytes."""
    name = "surface: byte counts"

    def __init__(self) -> None:
        self.info = {"model": self.name, "baseline": f"byte-counts-{VERSION}"}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = np.bincount(np.frombuffer(text.encode("utf-8"), dtype=np.uint8), minlength=256)
        return out


_WHITE_SPACES = re.compile(r"\s\s+")


def _trigrams(text: str) -> list[str]:
    """The text's character 3-grams, runs of white space read as one space (as scikit-learn's "char" analyzer)."""
    text = _WHITE_SPACES.sub(" ", text)
    return [text[k:k + 3] for k in range(len(text) - 2)]


class CharTrigrams:
    """Character 3-gram TF-IDF over the vocabulary of ``corpus`` (smoothed idf, raw counts, L2-normalised rows)."""
    name = "surface: character 3-gram TF-IDF"

    def __init__(self, corpus: Sequence[str]) -> None:
        docs = list(corpus)
        df: Counter[str] = Counter()
        for text in docs:
            df.update(set(_trigrams(text)))
        self.vocabulary = {gram: k for k, gram in enumerate(sorted(df))}
        n = len(docs)
        self.idf = np.array([math.log((1 + n) / (1 + df[g])) + 1 for g in sorted(df)], dtype=np.float64)
        digest = hashlib.sha256("\n".join(docs).encode()).hexdigest()[:16]
        self.info = {"model": self.name, "baseline": f"char-3gram-tfidf-{VERSION}", "corpus": digest}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(self.vocabulary)), dtype=np.float64)
        for i, text in enumerate(texts):
            for gram, count in Counter(_trigrams(text)).items():
                k = self.vocabulary.get(gram)
                if k is not None:
                    out[i, k] = count * self.idf[k]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)
