"""memory: the peak resident memory of a large model through fasteval's door, against the size of its weights.

A random XLM-RoBERTa of multilingual-e5-large's shape (24 layers, 1024 wide, a 250,002-token vocabulary: 560M
parameters, 2.2 GB of fp32 weights) is saved as a sentence-transformers folder; then, each in a fresh process with
its own FASTEVAL_HOME: `load_model` + encode with no export cached (torch.onnx's export, then the onnxruntime
session), and again from the cached export (the session alone). The first is what `models.sources.needs` budgets
(EXPORT_PEAK_PER_WEIGHT_BYTE x the weights) and what `fasteval sweep --dry-run` prints.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ..harness import Ctx, Line

_BUILD = r"""
import sys, torch
from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
from tokenizers import Tokenizer, models, pre_tokenizers, processors
raw, dest = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
config = XLMRobertaConfig(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                          intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1)
XLMRobertaModel(config, add_pooling_layer=False).eval().save_pretrained(raw)
vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{chr(c): 4 + i for i, c in enumerate(range(32, 127))}}
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
from transformers import PreTrainedTokenizerFast
PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                        unk_token="<unk>", cls_token="<s>", sep_token="</s>", model_max_length=512).save_pretrained(raw)
modules = [Transformer(raw, max_seq_length=128), Pooling(1024, pooling_mode="mean"), Normalize()]
SentenceTransformer(modules=modules, device="cpu").save(dest)
"""

_RUN = r"""
import json, sys, time
from pathlib import Path
start = time.perf_counter()
from fasteval.models.loader import load_model
enc = load_model(sys.argv[1], provider="cpu")
enc.encode(["2 kilometers", "2000 meters", "five meter", "1334 meters"] * 8)
hwm = next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM"))
print(json.dumps({"peak_mib": hwm / 1024, "seconds": time.perf_counter() - start}))
"""


def _child(code: str, args: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1500:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_memory(ctx: Ctx) -> list[Line]:
    from fasteval.models.sources.needs import EXPORT_PEAK_PER_WEIGHT_BYTE, folder_params

    tmp = Path(ctx.tmp) / "memory"
    raw, folder, home = tmp / "raw", tmp / "xlmr-560m", tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**ctx.env(), "FASTEVAL_HOME": str(home)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _BUILD, str(raw), str(folder)], capture_output=True, text=True,
                          env=env, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1500:])
    built = time.perf_counter() - started
    params = folder_params(folder) or 0
    weights_mib = params * 4 / 1024 ** 2
    export = _child(_RUN, [str(folder)], env)  # no export cached: torch.onnx, then the session
    cached = _child(_RUN, [str(folder)], env)  # the cached export: the session alone
    detail = {"params": params, "weights_mib": weights_mib, "export_peak_mib": export["peak_mib"],
              "cached_peak_mib": cached["peak_mib"], "export_ratio": export["peak_mib"] / weights_mib,
              "cached_ratio": cached["peak_mib"] / weights_mib, "budget_ratio": EXPORT_PEAK_PER_WEIGHT_BYTE,
              "build_seconds": built}
    return [Line("memory", f"load_model + encode of a random {params / 1e6:.0f}M-parameter XLM-RoBERTa "
                           f"({weights_mib / 1024:.2f} GiB of fp32 weights), nothing cached: export, then session",
                 export["seconds"], None, "", f"peak {export['peak_mib'] / 1024:.2f} GiB = "
                 f"{detail['export_ratio']:.2f}x the weights (budgeted {EXPORT_PEAK_PER_WEIGHT_BYTE}x)",
                 detail["export_ratio"] <= EXPORT_PEAK_PER_WEIGHT_BYTE, detail=detail),
            Line("memory", "the same from its cached export: the session alone", cached["seconds"], None, "",
                 f"peak {cached['peak_mib'] / 1024:.2f} GiB = {detail['cached_ratio']:.2f}x the weights", None,
                 detail=detail)]
