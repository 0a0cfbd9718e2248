"""An MTEB model as a fasteval encoder: the one adapter from MTEB's encoder protocol (``encode(DataLoader,
task_metadata=..., hf_split=..., hf_subset=...)``) to fasteval's (``encode(list[str])``). Every entry point applies
it by itself, through the one door (``fasteval.core.encoders``); it is ``fasteval.mteb.MtebEncoder`` too."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.results.mteb import SPLIT, SUBSET, metadata_of, require_mteb


class MtebEncoder:
    """An MTEB model seen as a fasteval encoder: each ``encode(list[str])`` is one MTEB ``encode`` call over a
    DataLoader of those texts (batch size from ``encode_kwargs``, default 32), returned as float32."""

    def __init__(self, model: Any, task_metadata=None, hf_split: str = SPLIT, hf_subset: str = SUBSET,
                 encode_kwargs: dict | None = None):
        require_mteb()
        self.model = model
        self.task_metadata = task_metadata if task_metadata is not None else metadata_of("PhysScoreMeasurementGeometry")
        self.hf_split, self.hf_subset = hf_split, hf_subset
        self.encode_kwargs = {"batch_size": 32, "show_progress_bar": False, **(encode_kwargs or {})}
        meta = getattr(model, "mteb_model_meta", None)
        self.name = str(getattr(meta, "name", None) or getattr(model, "name", None) or type(model).__name__)
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None) or getattr(model, "tokenizer", None)
        if tokenizer is not None and callable(getattr(tokenizer, "encode", None)):
            self.tokenizer = tokenizer

    def encode(self, texts: list[str]) -> np.ndarray:
        # What MTEB's encoder protocol takes for a text task: a DataLoader of {"text": [...]} batches, in order
        # (torch's and datasets' public classes; MTEB builds the same for its own text tasks).
        from datasets import Dataset
        from torch.utils.data import DataLoader

        loader = DataLoader(Dataset.from_dict({"text": list(texts)}), batch_size=int(self.encode_kwargs["batch_size"]))
        out = self.model.encode(loader, task_metadata=self.task_metadata, hf_split=self.hf_split,
                                hf_subset=self.hf_subset, prompt_type=None, **self.encode_kwargs)
        if hasattr(out, "detach"):
            out = out.detach().cpu().numpy()
        out = np.asarray(out, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise InputError(f"The MTEB model {self.name} returned embeddings of shape {out.shape} for {len(texts)} "
                             "texts.", "its encode must return one row per input text, (n, dim).")
        return out


