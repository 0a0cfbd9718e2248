"""Tiny random models of the paper's other architectures, built inside the suite (no model hub):
a Qwen3 last-token decoder (byte-level BPE, EOS appended and used as padding) and a LaBSE-like encoder
(CLS -> Dense(tanh) -> Normalize). Each is saved as a sentence-transformers folder.
"""
from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from pathlib import Path

EOS = "<|endoftext|>"
QWEN_HIDDEN = 32


def build_byte_bpe_tokenizer():
    """A byte-level BPE over the 256 byte symbols (no merges) that appends EOS, as Qwen3-Embedding's does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab[EOS] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOS])
    tok.post_processor = processors.TemplateProcessing(single=f"$A {EOS}", special_tokens=[(EOS, vocab[EOS])])
    return tok, vocab


def make_qwen3_folder(dest: Path, padding_side: str = "left", pooling: str = "lasttoken", seed: int = 0,
                      max_seq_length: int = 64) -> Path:
    """A tiny random Qwen3Model saved as a sentence-transformers folder: Transformer -> Pooling -> Normalize."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

    tok, vocab = build_byte_bpe_tokenizer()
    raw = dest.parent / (dest.name + "-raw")
    torch.manual_seed(seed)
    eos = vocab[EOS]
    config = Qwen3Config(vocab_size=len(vocab), hidden_size=QWEN_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
                         bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, tie_word_embeddings=False)
    Qwen3Model(config).eval().save_pretrained(raw)
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS, padding_side=padding_side,
                            model_max_length=128).save_pretrained(raw)
    modules = [Transformer(str(raw), max_seq_length=max_seq_length), Pooling(QWEN_HIDDEN, pooling_mode=pooling),
               Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(dest))
    return dest


def make_dense_folder(base: Path, dest: Path, out_features: int = 16) -> Path:
    """LaBSE's layout on the tiny BERT at ``base``: Transformer -> CLS Pooling -> Dense(tanh) -> Normalize."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    torch.manual_seed(1)
    transformer = Transformer(str(base), max_seq_length=48)
    hidden = transformer.get_embedding_dimension()
    modules = [transformer, Pooling(hidden, pooling_mode="cls"),
               Dense(hidden, out_features, activation_function=torch.nn.Tanh()), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(dest))
    return dest


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2))


def variant(src: Path, dest: Path, edits: dict[str, dict]) -> Path:
    """A copy of the folder ``src`` with JSON files changed: {"1_Pooling/config.json": {"key": value}, ...}.

    Used on a source folder and on its export alike, so a config-only change needs no second export.
    """
    shutil.copytree(src, dest)
    for rel, changes in edits.items():
        edit_json(dest / rel, **changes)
    return dest


@contextmanager
def torch_single_thread():
    """Run the torch reference on one thread: on a small, busy CI machine two threads made tiny models'
    forward passes 10-20x slower (thread contention), and one thread changes no tolerance here."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)
