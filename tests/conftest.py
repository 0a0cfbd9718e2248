"""Shared fixtures: a Hypothesis profile, and tiny models built inside the suite (no model hub)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# JIT compilation makes first examples slow; deadlines would only measure the compiler.
settings.register_profile("fasteval", deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("nojit", deadline=None, max_examples=15,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE",
                                     "nojit" if os.environ.get("NUMBA_DISABLE_JIT") == "1" else "fasteval"))

# A user's environment must not change what the suite holds (HF_HUB_OFFLINE=1 on an offline machine made the Hub
# tests fail): the variables that switch the Hub's or fasteval's behaviour are cleared for the whole run, and a test
# that needs one sets it itself (run_cli(env=...), monkeypatch).
for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT", "FASTEVAL_API_KEY",
              "FASTEVAL_DEBUG"):
    os.environ.pop(_name, None)

TINY_WORDS = ["meter", "meters", "kilogram", "kilograms", "liter", "liters", "second", "seconds", "zero", "one",
              "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "hundred", "centimeter",
              "centimeters", "millimeter", "millimeters", "kilometer", "kilometers", "gram", "grams",
              "milligram", "milligrams", "ton", "tons", "milliliter", "milliliters", "gallon", "gallons",
              "millisecond", "milliseconds", "minute", "minutes", "hour", "hours", "query", "passage"]


def build_tokenizer(max_length: int = 64):
    """A WordPiece tokenizer over digits, signs, letters and the protocol's unit words (BERT-style)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("0123456789.-+e") + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = specials + chars + ["##" + c for c in chars] + TINY_WORDS
    vocab = list(dict.fromkeys(vocab))
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))])
    tok.decoder = decoders.WordPiece()
    return tok, vocab


# The BERT-like architectures of the tiny encoders (a WordPiece tokenizer, [CLS] ... [SEP]): transformers' config
# and model class of each. nomic_bert is nomic-embed-text-v1.5's, native in transformers since 5.x.
BERT_LIKE = {"bert": ("BertConfig", "BertModel"), "nomic_bert": ("NomicBertConfig", "NomicBertModel")}


def make_st_folder(dest: Path, pooling: str = "mean", normalize: bool = True, seed: int = 0,
                   max_seq_length: int = 48, architecture: str = "bert") -> Path:
    """A tiny random BERT (or another ``BERT_LIKE`` architecture) saved as a sentence-transformers folder
    (Transformer, Pooling, [Normalize])."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    from transformers import PreTrainedTokenizerFast

    config_class, model_class = (getattr(transformers, name) for name in BERT_LIKE[architecture])
    tok, vocab = build_tokenizer()
    raw = dest.parent / (dest.name + "-raw")
    torch.manual_seed(seed)
    config = config_class(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=48, max_position_embeddings=64, pad_token_id=0)
    model_class(config).eval().save_pretrained(raw)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=64).save_pretrained(raw)
    modules = [Transformer(str(raw), max_seq_length=max_seq_length), Pooling(32, pooling_mode=pooling),
               *([Normalize()] if normalize else [])]
    SentenceTransformer(modules=modules, device="cpu").save(str(dest))
    return dest


@pytest.fixture(scope="session")
def fasteval_home(tmp_path_factory) -> Path:
    """A private cache root for the whole session (exports land here, never in the user's cache)."""
    home = tmp_path_factory.mktemp("fasteval-home")
    os.environ["FASTEVAL_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def tiny_cls_folder(tmp_path_factory) -> Path:
    """The tiny model's weights (seed 0) with CLS pooling: tiny_st_folder (mean pooling) misconfigured."""
    pytest.importorskip("sentence_transformers")
    return make_st_folder(tmp_path_factory.mktemp("cls") / "tiny-bert-cls", pooling="cls")


@pytest.fixture(scope="session")
def tiny_bare_folder(tmp_path_factory) -> Path:
    """The tiny model's weights (seed 0) without its Normalize: tiny_st_folder deployed unnormalised."""
    pytest.importorskip("sentence_transformers")
    return make_st_folder(tmp_path_factory.mktemp("bare") / "tiny-bert-bare", normalize=False)


@pytest.fixture(scope="session")
def tiny_nomic_folder(tmp_path_factory) -> Path:
    """A tiny random NomicBert (nomic-embed-text-v1.5's architecture, transformers' own class) with mean pooling."""
    pytest.importorskip("sentence_transformers")
    return make_st_folder(tmp_path_factory.mktemp("nomic") / "tiny-nomic", architecture="nomic_bert")


@pytest.fixture(scope="session")
def tiny_st_folder(tmp_path_factory) -> Path:
    pytest.importorskip("sentence_transformers")
    return make_st_folder(tmp_path_factory.mktemp("tiny") / "tiny-bert")


@pytest.fixture(scope="session")
def tiny_encoder(tiny_st_folder, fasteval_home):
    """The tiny folder exported through torch.onnx and loaded with onnxruntime (quiet)."""
    pytest.importorskip("onnxscript")  # the export extra
    from fasteval.models.loader import load_model

    return load_model(str(tiny_st_folder), provider="cpu")
