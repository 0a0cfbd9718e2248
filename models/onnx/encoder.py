"""The encoder: tokenizers -> onnxruntime session -> pooling -> Dense -> Normalize, float32 out. No torch.

``OnnxEncoder(folder).encode(texts)`` reproduces ``SentenceTransformer(folder).encode(texts)`` (fp32): same
tokenisation (the folder's tokenizer.json, its max sequence length, padding to the longest text in a batch),
same pooling and normalisation, and by default the same batches (sentence-transformers sorts by character
length, longest first, and cuts batches of 32; batch composition changes the last bits of an embedding).
"""
from __future__ import annotations

import json
import logging
import threading
from functools import cached_property
from typing import Any

import numpy as np

from ...core.choices import BATCH_ORDERS, BATCHINGS, PACKED_BATCH_TOKENS, PACKING, PROVIDERS, check_choice
from ...core.errors import ModelError
from ..sources.folder import ModelFolder
from .gpu import open_session, planned_provider
from ...core.embeddings import normalize_rows
from .head import POOLED_OUTPUT, POOLING_MASK, pooled_graph, token_output
from .pooling import dense, pool

log = logging.getLogger(__name__)


class OnnxEncoder:
    """Embed texts with an exported model folder. ``encode(list[str]) -> float32 (n, dim)``."""

    def __init__(self, folder: ModelFolder, *, provider: str = "auto", batch_size: int = 32,
                 threads: int | None = None, order: str = "text-length", prompt: str | None = None,
                 prompt_name: str = "", batching: str = "paper",
                 batch_tokens: int = PACKED_BATCH_TOKENS, name: str | None = None, identity: dict | None = None,
                 tokenizer: Any = None, session: Any = None, lowercase: bool | None = None):
        """``name``: the model's name in results (default: the folder's); ``identity``: what the loader knows of
        where the model came from (``model``, ``source``, ``source_sha256``, ``onnx_sha256``, ``dtype``);
        ``tokenizer``: a ``tokenizers.Tokenizer`` to run instead of the folder's tokenizer.json (drift's diagnosis
        runs variants of it), configured as this model runs it; ``session``: an open onnxruntime session of the
        same graph on the CPU to share (a variant's); ``lowercase``: whether to lowercase texts before the tokenizer
        (default: as the folder says; a variant whose tokenizer's normalizer decides passes False)."""
        if folder.onnx_file is None:
            raise ModelError(f"No model.onnx in {folder.path}.", "export it first: fasteval export PATH.")
        if provider not in PROVIDERS:
            raise ModelError(f"Unknown provider {provider!r}.", f"use one of {', '.join(PROVIDERS)}.")
        if order not in BATCH_ORDERS:
            raise ModelError(f"Unknown batch order {order!r}.", f"use one of {', '.join(BATCH_ORDERS)}.")
        if batch_size < 1:
            raise ModelError(f"batch_size must be >= 1, got {batch_size}.", "pass a positive batch size.")
        self.folder = folder
        self.batching = check_choice(batching, BATCHINGS, "batching", "--batching")
        if batch_tokens < 1:
            raise ModelError(f"batch_tokens must be >= 1, got {batch_tokens}.", "pass a positive token budget.")
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.order = "token-length" if batching == "packed" else order
        self.prompt = prompt or ""
        self.prompt_name = prompt_name or ""
        self.name = name or folder.path.name
        self.identity = dict(identity or {})
        # the folder's tokenizer.json is parsed at first use (a finished model a rerun skips never reads it); one
        # given (a variant's) is configured now
        self._tokenizer = self.configured(tokenizer) if tokenizer is not None else None
        self.do_lower_case = folder.do_lower_case if lowercase is None else lowercase
        self.dense_weights = [folder.dense_weights(layer) for layer in folder.dense]
        self._prompt_length = self._count_prompt_tokens() if self.prompt else 0
        # The onnxruntime session starts at the first encode (a sweep that skips a finished model never
        # pays for one); until then ``provider`` is the one it is planned to use.
        self._requested_provider, self.threads = provider, threads
        self.provider = planned_provider(provider)
        self._opening: threading.Thread | None = None  # open_ahead's, until the session is first asked for
        self._opened: Any = None  # what it opened: _open()'s tuple, or what it raised
        self._session = session
        self._io_binding: bool | None = None
        self._graph_head: bool | None = None  # asked for (None: on CUDA); what runs is self._head_in_graph
        self._head_in_graph = False

    @property
    def tokenizer(self):
        """The tokenizer as this model runs it (``configured``), the folder's read at first use."""
        if self._tokenizer is None:
            from ..sources.bounds import read_tokenizer

            self._tokenizer = self.configured(read_tokenizer(self.folder.tokenizer_file))
        return self._tokenizer

    @cached_property
    def padding_side(self) -> str:
        """The side its tokenizer pads (the folder's tokenizer_config.json; right unless it says left)."""
        return "left" if self.folder.tokenizer_config().get("padding_side") == "left" else "right"

    def configured(self, tokenizer):
        """``tokenizer`` as this model runs it: truncated at the folder's max_seq_length on its side, padded with
        its pad token on its side (the folder's tokenizer, or a variant of it: drift's diagnosis)."""
        tokenizer.no_padding()
        tokenizer.no_truncation()
        config = self.folder.tokenizer_config()
        if self.folder.max_seq_length:
            tokenizer.enable_truncation(
                max_length=self.folder.max_seq_length,
                direction="left" if config.get("truncation_side") == "left" else "right")
        pad_id, pad_token = self._pad(tokenizer)
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token, direction=self.padding_side)
        return tokenizer

    @property
    def session(self):
        """The onnxruntime session, started on first use (or by ``open_ahead``: then its first use waits for it)."""
        if self._session is None:
            opened = self._join_opening() or self._open()
            self._session, self.provider, self._head_in_graph = opened
        return self._session

    def open_ahead(self) -> None:
        """Start opening the session in a thread of its own: onnxruntime reads and optimises the graph (0.2 s on the
        CPU for MiniLM, seconds on a GPU) without the GIL while the caller reads the tokenizer and makes its texts.
        Nothing changes until the session is first asked for, which waits for it and raises what it raised."""
        if self._session is not None or self._opening is not None:
            return

        def opening() -> None:
            try:
                self._opened = self._open()
            except BaseException as err:  # noqa: BLE001 - raised in the thread that asks for the session
                self._opened = err

        self._opening = threading.Thread(target=opening, name="fasteval-session", daemon=True)
        self._opening.start()

    def _join_opening(self):
        """What ``open_ahead``'s thread opened (None when none was started); its error raised here."""
        if self._opening is None:
            return None
        self._opening.join()
        opened, self._opening, self._opened = self._opened, None, None
        if isinstance(opened, BaseException):
            raise opened
        return opened

    def shared_session(self):
        """Its session where another encoder of the same graph on the CPU may share it (its plain graph, pooled in
        numpy), else None."""
        return self.session if self.provider == "cpu" and not self.graph_head else None

    @cached_property
    def tokenizer_json(self) -> dict[str, Any]:
        """Its tokenizer.json: the text and the parsed object (read once: its variants change copies of it)."""
        text = self.folder.tokenizer_file.read_text(encoding="utf-8")
        return {"text": text, "json": json.loads(text)}

    def variants(self) -> list:
        """Its usual misconfigurations, each one change away from it (``variants.variants_of``): what drift's
        diagnosis tries."""
        from .variants import variants_of

        return variants_of(self)

    def variant(self, variant, load=None) -> OnnxEncoder:
        """This model under ``variant`` (a ``variants.Variant``: pooling, Dense, truncation, prompt, lowercasing,
        special tokens, precision, normalisation), on the CPU (``variants.variant_encoder``)."""
        from .variants import variant_encoder

        return variant_encoder(self, variant, load)

    def _open(self):
        """(session, provider, head in the graph). On the GPU the session runs the graph with the sentence head
        (models/onnx/head.py: only batch x dimension comes back); on the CPU the plain graph, pooled in numpy (the
        reference every CPU result is keyed by). A head session that fell back to the CPU is opened again plain,
        so that a result keyed "cpu" is always numpy's pooling, unless ``graph_head`` was set on purpose."""
        onnx_file = self.folder.onnx_file
        assert onnx_file is not None
        wanted = self.provider == "cuda" if self._graph_head is None else self._graph_head
        if wanted:
            session, provider = open_session(pooled_graph(self.folder), self._requested_provider, self.threads,
                                             weights=onnx_file.parent)
            if provider == "cuda" or self._graph_head:
                return session, provider, True
        session, provider = open_session(onnx_file, self._requested_provider, self.threads)
        if provider == "cpu" and self.identity.get("dtype") == "fp16":
            _fp16_on_cpu(self.name)
        return session, provider, False

    @property
    def graph_head(self) -> bool:
        """Whether pooling, Dense and Normalize run inside the graph (see _open): on CUDA by default. Set before
        the first encode (setting it starts the next session afresh)."""
        if self._session is not None:
            return self._head_in_graph
        return self.provider == "cuda" if self._graph_head is None else self._graph_head

    @graph_head.setter
    def graph_head(self, value: bool) -> None:
        self._graph_head = bool(value)
        if self._opening is not None:  # a session opened ahead under the head before: not this one's
            self._opening.join()
            self._opening = self._opened = None
        self._session = None
        self.__dict__.pop("input_names", None)
        self.__dict__.pop("output_name", None)

    @property
    def info(self) -> dict:
        """Every setting that changes an embedding (the result and embedding-cache keys hold them): where the
        model came from, the provider it runs on (the planned one until the session starts), dtype, batching,
        prompt, and the folder's pooling, normalisation, length and Dense layers."""
        return {
            **self.identity,
            "provider": self.provider,
            "dtype": self.identity.get("dtype", "fp32"),
            "batch_size": self.batch_size,
            "batch_order": self.order,
            **({"batching": "packed", "batch_tokens": self.batch_tokens, "packing": PACKING}
               if self.batching == "packed" else {}),
            "prompt": self.prompt,
            "prompt_name": self.prompt_name,
            **self.folder.settings(),
        }

    def settled(self) -> dict:
        """What settled only as it ran: the provider its session runs on (``info`` says the planned one until the
        session starts; a GPU that could not take it falls back to the CPU)."""
        return {"provider": self.provider}

    def settle(self) -> dict:
        """``settled()`` once it is known: a session planned for the GPU is opened now (it may fall back to the
        CPU); one planned for the CPU stays unopened, as nothing about it can change."""
        if self._session is None and self.provider != "cpu":
            _ = self.session
        return self.settled()

    @cached_property
    def input_names(self) -> set[str]:
        return {i.name for i in self.session.get_inputs()}

    @cached_property
    def output_name(self) -> str:
        outputs = [o.name for o in self.session.get_outputs()]
        return POOLED_OUTPUT if self._head_in_graph else token_output(outputs)

    @property
    def io_binding(self) -> bool:
        """Run through an I/O binding (see _infer): on CUDA by default; on the CPU plain session.run is as fast."""
        return self.provider == "cuda" if self._io_binding is None else self._io_binding

    @io_binding.setter
    def io_binding(self, value: bool) -> None:
        self._io_binding = bool(value)

    # --- folder details -------------------------------------------------------------------------------------
    def _pad(self, tokenizer) -> tuple[int, str]:
        declared = self.folder.padding()
        if declared is not None:
            return declared
        for token in ("[PAD]", "<pad>", "<|endoftext|>", "<|end_of_text|>", "</s>"):
            token_id = tokenizer.token_to_id(token)
            if token_id is not None:
                return int(token_id), token
        return 0, ""

    def _count_prompt_tokens(self) -> int:
        """Tokens of the prompt alone, less one trailing special token (EOS, SEP) if there is one: what
        sentence-transformers masks out when the pooling has ``include_prompt=False``."""
        enc = self.tokenizer.encode(self.prompt)
        if self.folder.max_seq_length and len(enc.ids) >= self.folder.max_seq_length:
            raise ModelError(f"The prompt takes all {self.folder.max_seq_length} tokens {self.folder.path.name} reads: "
                             "no text would be left.", "pass a shorter --prompt (or none).")
        return len(enc.ids) - (1 if enc.special_tokens_mask and enc.special_tokens_mask[-1] else 0)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The model's token ids of each text without special tokens (PROTOCOL.md 2.2, token Levenshtein)."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [[i for i, m in zip(e.ids, e.attention_mask) if m] for e in encodings]

    # --- encoding -------------------------------------------------------------------------------------------
    def _batches(self, texts: list[str]) -> tuple[np.ndarray, list[slice]]:
        """(order, batches): the texts sorted longest first (by characters, as sentence-transformers does, or
        by tokens), cut into batches of ``batch_size`` texts, or, when packed, of at most ``batch_tokens``
        tokens (rows x the batch's longest row, so padding counts)."""
        if self.order == "text-length":  # sentence-transformers' own grouping
            order = np.argsort([-len(t) for t in texts])
        else:
            # the real tokens (the tokenizer pads a batch to its longest: len(ids) would be that for every text)
            lengths = np.array([sum(e.attention_mask) for e in self.tokenizer.encode_batch(texts)])
            order = np.argsort(-lengths, kind="stable")
        if self.batching != "packed":
            return order, [slice(s, s + self.batch_size) for s in range(0, len(texts), self.batch_size)]
        batches, start = [], 0
        sorted_lengths = lengths[order]
        while start < len(texts):
            rows = max(1, self.batch_tokens // max(int(sorted_lengths[start]), 1))  # the first row is the longest
            batches.append(slice(start, start + rows))
            start += rows
        return order, batches

    def _infer(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's token embeddings for one batch. With ``io_binding`` (CUDA), the inputs are bound from
        host memory and onnxruntime allocates the output on the provider's device and copies it back once,
        instead of session.run's per-call output handling; the numbers are the same."""
        if not self.io_binding:
            return self.session.run([self.output_name], feed)[0]
        binding = self.session.io_binding()
        for name, value in feed.items():
            binding.bind_cpu_input(name, np.ascontiguousarray(value))
        binding.bind_output(self.output_name, "cuda" if self.provider == "cuda" else "cpu")
        self.session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0]

    def _run(self, batch: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(batch)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        input_names = self.input_names
        if "token_type_ids" in input_names:
            feed["token_type_ids"] = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        if "position_ids" in input_names:
            # What transformers uses when sentence-transformers passes none: 0..seq-1 on every row, left
            # padding included (rotary models only see position differences, so this equals the per-row
            # count; absolute-position models then match sentence-transformers, which is the reference).
            feed["position_ids"] = np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape).copy()
        feed = {k: v for k, v in feed.items() if k in input_names}
        pooling_mask = self._pooling_mask(mask)
        if self._head_in_graph:  # pooled, Dense and normalised in the graph
            feed[POOLING_MASK] = pooling_mask
            return self._infer(feed)
        tokens = self._infer(feed).astype(np.float32, copy=False)
        out = pool(tokens, pooling_mask, self.folder.pooling, attention=mask)
        for layer, (weight, bias) in zip(self.folder.dense, self.dense_weights):
            out = dense(out, layer, weight, bias)
        if self.folder.normalize:
            out = normalize_rows(out)
        return out.astype(np.float32, copy=False)

    def _pooling_mask(self, mask: np.ndarray) -> np.ndarray:
        """The attention mask, the prompt's tokens cleared when the pooling leaves the prompt out."""
        if self._prompt_length and not self.folder.pooling.include_prompt:
            mask = mask.copy()
            if self.padding_side == "left":
                starts = mask.shape[1] - mask.sum(axis=1)
                for row, start in enumerate(starts):
                    mask[row, start:start + self._prompt_length] = 0
            else:
                mask[:, :self._prompt_length] = 0
        return mask

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in one call (batched, order preserved). float32 (len(texts), dim)."""
        if isinstance(texts, str):
            raise ModelError("encode() takes a list of strings, not one string.", "wrap it: encode([text]).")
        texts = [self.prompt + t for t in texts]
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        order, batches = self._batches(texts)
        parts = [self._run([texts[i] for i in order[b]]) for b in batches]
        sorted_out = np.concatenate(parts, axis=0)
        out = np.empty_like(sorted_out)
        out[order] = sorted_out
        if not np.isfinite(out).all():
            raise ModelError(f"{self.folder.path.name} produced NaN or infinite embeddings.",
                             "check the export (try fp32) or the model weights.")
        return out


_FP16_ON_CPU_SAID: set[str] = set()


def _fp16_on_cpu(name: str) -> None:
    """One line (once a model and process) where an fp16 graph runs on the CPU: fp16 is a GPU dtype. Measured sane
    here (onnxruntime 1.31 on an AVX-512 AMD EPYC: 1.0x fp32's time, every cosine to fp32 above 0.9999), it is kept
    for what it is for (a local reference of a GPU fp16 deployment, drift), but onnxruntime 1.29 and later run fp16
    Gemm natively on x86 CPUs, reported thousands of times slower on some (onnxruntime issue 32255)."""
    if name not in _FP16_ON_CPU_SAID:
        _FP16_ON_CPU_SAID.add(name)
        log.warning("%s: its fp16 graph runs on the CPU, where fp16 is no faster than fp32 and onnxruntime 1.29+ can "
                    "be far slower on some x86 CPUs; use --dtype fp32 on the CPU, fp16 on a GPU.", name)

