"""Tiny random models of the paper's other architectures, built inside the suite (no model hub): Qwen3 and
Gemma 3 last-token decoders (byte-level BPE, EOS appended and used as padding), a ModernBERT encoder (a CLS token
first) and a LaBSE-like encoder (CLS -> Dense(tanh) -> Normalize). Each is saved as a sentence-transformers folder.
"""
from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from pathlib import Path

EOS = "<|endoftext|>"
QWEN_HIDDEN = 32


def build_byte_bpe_tokenizer(first: str | None = None, last: str = EOS):
    """A byte-level BPE over the 256 byte symbols (no merges) that appends ``last`` (EOS, as Qwen3-Embedding's
    does) and, with ``first``, puts it before the text (a CLS token, as ModernBERT's does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    specials = [t for t in (first, last) if t]
    for token in specials:
        vocab[token] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    template = (f"{first} " if first else "") + f"$A {last}"
    tok.post_processor = processors.TemplateProcessing(single=template,
                                                       special_tokens=[(t, vocab[t]) for t in specials])
    return tok, vocab


# The tiny random twins of the paper's architecture families: the transformers model and config of each, and the
# special tokens its tokenizer adds (first, last).
FAMILIES = {
    "qwen3": ("Qwen3Model", "Qwen3Config", None),  # Qwen3-Embedding, harrier-oss-v1-0.6b
    "gemma3_text": ("Gemma3TextModel", "Gemma3TextConfig", None),  # harrier-oss-v1-270m (causal)
    # embeddinggemma-300m: Gemma 3 with bidirectional attention (its config's use_bidirectional_attention)
    "gemma3_bidirectional": ("Gemma3TextModel", "Gemma3TextConfig", None),
    "modernbert": ("ModernBertModel", "ModernBertConfig", "<cls>"),  # DenseOn, granite-embedding-english-r2
    "xlm-roberta": ("XLMRobertaModel", "XLMRobertaConfig", "<s>"),  # bge-m3, multilingual-e5, LaBSE's kin
}


def _tiny_config(family: str, vocab: dict, first: str | None):
    import transformers

    config_class = getattr(transformers, FAMILIES[family][1])
    eos = vocab[EOS]
    if family == "xlm-roberta":  # positions start after the padding id, as XLM-R's do
        return config_class(vocab_size=len(vocab), hidden_size=QWEN_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, max_position_embeddings=128 + eos + 2, pad_token_id=eos,
                            bos_token_id=vocab[first], eos_token_id=eos, type_vocab_size=1)
    if family == "modernbert":
        return config_class(vocab_size=len(vocab), hidden_size=QWEN_HIDDEN, intermediate_size=64, num_hidden_layers=3,
                            num_attention_heads=4, max_position_embeddings=128, local_attention=16,
                            pad_token_id=eos, cls_token_id=vocab[first], sep_token_id=eos, bos_token_id=vocab[first],
                            eos_token_id=eos)
    return config_class(vocab_size=len(vocab), hidden_size=QWEN_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
                        bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, tie_word_embeddings=False,
                        **({"sliding_window": 16, "query_pre_attn_scalar": 8} if family.startswith("gemma3") else {}),
                        **({"use_bidirectional_attention": True} if family == "gemma3_bidirectional" else {}))


def make_tiny_folder(dest: Path, family: str = "qwen3", padding_side: str = "left", pooling: str = "lasttoken",
                     seed: int = 0, max_seq_length: int = 64, normalize: bool = True) -> Path:
    """A tiny random model of ``family`` (``FAMILIES``) saved as a sentence-transformers folder: Transformer ->
    Pooling (-> Normalize)."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    from transformers import PreTrainedTokenizerFast

    first = FAMILIES[family][2]
    tok, vocab = build_byte_bpe_tokenizer(first)
    raw = dest.parent / (dest.name + "-raw")
    torch.manual_seed(seed)
    model_class = getattr(transformers, FAMILIES[family][0])
    model_class(_tiny_config(family, vocab, first)).eval().save_pretrained(raw)
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS, padding_side=padding_side,
                            model_max_length=128, **({"cls_token": first, "model_input_names": ["input_ids",
                                                                                                "attention_mask"]}
                                                     if first else {})).save_pretrained(raw)
    modules = [Transformer(str(raw), max_seq_length=max_seq_length), Pooling(QWEN_HIDDEN, pooling_mode=pooling),
               *([Normalize()] if normalize else [])]
    SentenceTransformer(modules=modules, device="cpu").save(str(dest))
    return dest


def make_qwen3_folder(dest: Path, padding_side: str = "left", pooling: str = "lasttoken", seed: int = 0,
                      max_seq_length: int = 64) -> Path:
    """A tiny random Qwen3Model saved as a sentence-transformers folder: Transformer -> Pooling -> Normalize."""
    return make_tiny_folder(dest, "qwen3", padding_side, pooling, seed, max_seq_length)


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
