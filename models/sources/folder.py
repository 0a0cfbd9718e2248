"""A model is a folder. This module reads the folder contract of sentence-transformers / Hugging Face.

Accepted layouts (the docstring is the contract; every case is handled below):

* sentence-transformers folder: ``modules.json`` lists Transformer -> Pooling -> [Dense ...] -> [Normalize];
  the transformer files (``config.json``, weights, ``tokenizer.json``) sit at the module's path (usually the
  root); ``1_Pooling/config.json`` says the pooling; ``sentence_bert_config.json`` the max sequence length.
* plain Hugging Face folder: ``config.json`` + weights + ``tokenizer.json`` and no ``modules.json``:
  mean pooling, no normalisation (what sentence-transformers itself assumes for such a folder).
* an exported folder: ``model.onnx`` (or ``onnx/model.onnx``) + ``tokenizer.json``, with the same optional
  sentence-transformers files beside it (fasteval's own export writes them there).

Reading a folder imports nothing heavy.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import ModelError, first_line

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
# sentence-transformers' flag names, in the order it concatenates the pooled vectors.
ST_POOLING_FLAGS = (
    ("pooling_mode_cls_token", "cls"),
    ("pooling_mode_max_tokens", "max"),
    ("pooling_mode_mean_tokens", "mean"),
    ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
    ("pooling_mode_weightedmean_tokens", "weightedmean"),
    ("pooling_mode_lasttoken", "lasttoken"),
)


@dataclass(frozen=True)
class PoolingConfig:
    modes: tuple[str, ...] = ("mean",)
    include_prompt: bool = True

    @property
    def name(self) -> str:
        return "+".join(self.modes)


@dataclass(frozen=True)
class DenseLayer:
    """A sentence-transformers Dense module: y = activation(x W^T + b)."""
    path: str
    in_features: int
    out_features: int
    bias: bool
    activation: str


@dataclass
class ModelFolder:
    path: Path
    transformer_path: Path
    tokenizer_file: Path
    onnx_file: Path | None
    pooling: PoolingConfig
    normalize: bool
    max_seq_length: int | None
    dense: tuple[DenseLayer, ...] = ()
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None

    @property
    def has_weights(self) -> bool:
        return any((self.transformer_path / w).exists() for w in WEIGHT_FILES)

    def tokenizer_config(self) -> dict:
        """tokenizer_config.json (the folder's, else the transformer's; {} when there is none)."""
        for base in (self.path, self.transformer_path):
            cfg = base / "tokenizer_config.json"
            if cfg.exists():
                return _read_json(cfg)
        return {}

    def padding(self) -> tuple[int, str] | None:
        """(pad id, pad token) as tokenizer.json declares them, else None."""
        padding = _read_json(self.tokenizer_file).get("padding") or {}
        if "pad_id" in padding and "pad_token" in padding:
            return int(padding["pad_id"]), str(padding["pad_token"])
        return None

    @property
    def do_lower_case(self) -> bool:
        """sentence_bert_config.json's do_lower_case (sentence-transformers lower-cases the input first)."""
        cfg = self.path / "sentence_bert_config.json"
        return bool(cfg.exists() and _read_json(cfg).get("do_lower_case"))

    def dense_weights(self, layer: DenseLayer):
        """(weight, bias or None) of one exported Dense layer, float32, from its dense.npz."""
        import numpy as np

        npz = self.path / layer.path / "dense.npz"
        if not npz.exists():
            raise ModelError(f"Dense weights {npz} are missing.", "re-export the model with `fasteval export`.")
        try:
            with np.load(npz, allow_pickle=False) as data:
                return (data["weight"].astype(np.float32),
                        data["bias"].astype(np.float32) if "bias" in data else None)
        except (OSError, ValueError, KeyError, TypeError) as err:  # a folder, object arrays, no weight
            raise ModelError(f"Cannot read the Dense weights {npz}: {first_line(err, 120)}.",
                             "re-export the model with `fasteval export`.") from None

    def settings(self) -> dict:
        """What of the folder changes an embedding (goes into result keys)."""
        return {"pooling": self.pooling.name, "include_prompt": self.pooling.include_prompt,
                "normalize": self.normalize, "max_seq_length": self.max_seq_length,
                "dense": [asdict(d) for d in self.dense]}


def _read_json(path: Path) -> Any:
    """A model folder's JSON file, bounded and parsed (``bounds.read_json_file``)."""
    from .bounds import read_json_file

    return read_json_file(path)


def configured_prompts(st_config: Any) -> dict[str, str]:
    """The prompts a config_sentence_transformers.json (parsed) configures, by name. sentence-transformers 6 saves
    {"query": "", "document": ""} for every model: an empty prompt is none."""
    prompts = st_config.get("prompts") if isinstance(st_config, dict) else None
    return {str(name): text for name, text in prompts.items() if text} if isinstance(prompts, dict) else {}


def parse_pooling(cfg: dict) -> PoolingConfig:
    """Pooling from a 1_Pooling/config.json in either the flag format or the newer ``pooling_mode`` string."""
    if isinstance(cfg.get("pooling_mode"), str):
        modes = tuple(m.strip() for m in cfg["pooling_mode"].split("+"))
        modes = tuple({"mean_tokens": "mean", "cls_token": "cls", "max_tokens": "max", "last_token": "lasttoken",
                       "mean_sqrt_len": "mean_sqrt_len_tokens"}.get(m, m) for m in modes)
    else:
        modes = tuple(mode for flag, mode in ST_POOLING_FLAGS if cfg.get(flag))
    unknown = [m for m in modes if m not in POOLING_MODES]
    if unknown or not modes:
        raise ModelError(f"Unsupported pooling config {cfg!r}.",
                         f"use one of the pooling modes {', '.join(POOLING_MODES)}.")
    return PoolingConfig(modes, bool(cfg.get("include_prompt", True)))


def _find_onnx(path: Path) -> Path | None:
    for candidate in (path / "model.onnx", path / "onnx" / "model.onnx"):
        if candidate.exists():
            return candidate
    return None


def _max_seq_length(st_dir: Path, tf_dir: Path) -> int | None:
    """sentence_bert_config.json first, then tokenizer_config.json, capped by the position embeddings."""
    for cfg_path in (st_dir / "sentence_bert_config.json", tf_dir / "sentence_bert_config.json"):
        if cfg_path.exists():
            value = _read_json(cfg_path).get("max_seq_length")
            if value:
                return int(value)
    limit = None
    if (tf_dir / "tokenizer_config.json").exists():
        value = _read_json(tf_dir / "tokenizer_config.json").get("model_max_length")
        if isinstance(value, int) and value < 1_000_000:
            limit = value
    if (tf_dir / "config.json").exists():
        positions = _read_json(tf_dir / "config.json").get("max_position_embeddings")
        if isinstance(positions, int) and (limit is None or positions < limit):
            limit = positions
    return limit


def _module_path(root: Path, module: Any, modules_file: Path) -> Path:
    """A module's folder as modules.json names it, refused in one line unless it is inside ``root`` (as
    sentence-transformers refuses it): a path that leaves the folder would be read, and exported, without being
    part of the folder's content hash."""
    if not isinstance(module, dict):
        raise ModelError(f"{modules_file} lists {str(module)[:60]!r}, not a module.",
                         "repair or re-download the model folder.")
    rel = module.get("path", "")
    if not isinstance(rel, str):
        raise ModelError(f"{modules_file} gives a module the path {rel!r}, not a folder name.",
                         "repair or re-download the model folder.")
    target = root / rel  # an absolute rel replaces root: the check below refuses it as it refuses ../
    try:
        target.resolve().relative_to(root.resolve())
    except ValueError:
        raise ModelError(f"{modules_file} sends the {module.get('type')} module to {rel!r}, outside the model "
                         "folder.", "keep every module's folder inside the model folder (sentence-transformers "
                         "refuses such a path too).") from None
    return target


def load_folder(path: str | Path) -> ModelFolder:
    """Read a model folder; raise ModelError naming the missing piece and the fix."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"Model path {path} does not exist.",
                         "pass a model folder, or a name listed by `fasteval models`.")
    if not path.is_dir():
        raise ModelError(f"Model path {path} is not a folder.", "pass the folder that holds config.json.")
    if not (path / "config.json").exists() and not (path / "modules.json").exists():
        models = sorted(d.name for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")
                        and ((d / "config.json").exists() or (d / "modules.json").exists()))
        if models:  # a folder of model folders, not a model
            shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
            raise ModelError(f"{path} is a folder of {len(models)} model folder(s) ({shown}), not a model.",
                             f"pass each with --model (e.g. --model {path / models[0]}), or list them in a file "
                             "for --models-file FILE.")
    pooling, normalize, dense, transformer_path = PoolingConfig(), False, [], path
    modules_file = path / "modules.json"
    if modules_file.exists():
        modules = _read_json(modules_file)
        for module in modules:
            mpath = _module_path(path, module, modules_file)
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            if kind == "Transformer":
                transformer_path = mpath
            elif kind == "Pooling":
                pooling = parse_pooling(_read_json(mpath / "config.json"))
            elif kind == "Normalize":
                normalize = True
            elif kind == "Dense":
                cfg = _read_json(mpath / "config.json")
                dense.append(DenseLayer(str(mpath.relative_to(path)), int(cfg["in_features"]),
                                        int(cfg["out_features"]), bool(cfg.get("bias", True)),
                                        str(cfg.get("activation_function", "torch.nn.modules.linear.Identity"))))
            else:
                raise ModelError(f"{modules_file} lists a module fasteval does not support: {module.get('type')}.",
                                 "use a folder whose modules are Transformer, Pooling, Dense and Normalize.")
    tokenizer_file = transformer_path / "tokenizer.json"
    if not tokenizer_file.exists() and (path / "tokenizer.json").exists():
        tokenizer_file = path / "tokenizer.json"
    if not tokenizer_file.exists():
        raise ModelError(f"No tokenizer.json in {path}.",
                         "save the tokenizer with `tokenizer.save_pretrained(folder)` (a fast tokenizer).")
    from .bounds import MAX_TOKENIZER_BYTES, checked_file

    checked_file(tokenizer_file, MAX_TOKENIZER_BYTES)
    prompts, default_prompt_name = {}, None
    if (path / "config_sentence_transformers.json").exists():
        st_cfg = _read_json(path / "config_sentence_transformers.json")
        prompts = configured_prompts(st_cfg)
        default_prompt_name = st_cfg.get("default_prompt_name")
    folder = ModelFolder(
        path=path, transformer_path=transformer_path, tokenizer_file=tokenizer_file, onnx_file=_find_onnx(path),
        pooling=pooling, normalize=normalize, max_seq_length=_max_seq_length(path, transformer_path),
        dense=tuple(dense), prompts=prompts, default_prompt_name=default_prompt_name)
    if folder.onnx_file is None and not folder.has_weights:
        raise ModelError(f"No weights in {path} (neither model.onnx nor model.safetensors / pytorch_model.bin).",
                         "pass a complete model folder.")
    return folder


def files_of(root: Path) -> list[tuple[str, Path]]:
    """(relative path, file) of every file below ``root`` that a content hash covers (hidden ones skipped), sorted."""
    files = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root).as_posix()
        if not any(part.startswith(".") for part in rel.split("/")):
            files.append((rel, file))
    return files


# A remembered hash is trusted only while every file it covers has the size, mtime_ns, ctime_ns, inode and device
# it had (git's index trusts the same stat fields; a user can set mtime back, never ctime: any write, and the
# utime call that would hide it, moves ctime). A file changed within RACY_NS of the hashing is not trusted
# until it is older (timestamps are coarse: two writes in one tick share a ctime), as git treats a racily clean
# entry.
RACY_NS = 2 * 10**9


def _signature(file: Path) -> list[int]:
    st = file.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _memoized(kind: str, path: Path, stats: list, compute) -> str:
    """A hash remembered in FASTEVAL_HOME/hashes.json by (path, every file's stat signature), so a model is read
    again only when a file of it changed; computed (and remembered) otherwise."""
    import time

    from ...core.io import fasteval_home

    memo_path = fasteval_home() / "hashes.json"
    key = f"{kind}:{path.resolve()}"
    signature = hashlib.sha256(json.dumps(stats).encode()).hexdigest()
    memo: dict = {}
    try:
        memo = json.loads(memo_path.read_text())
        if not isinstance(memo, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        memo = {}
    except (OSError, ValueError) as err:  # derived data: rebuilt from the files themselves
        from ...core.errors import warn_rebuilt

        warn_rebuilt("hash memo", memo_path, err)
        memo = {}
    entry = memo.get(key)
    newest = max((max(s[-4], s[-3]) for s in stats), default=0)  # the newest mtime or ctime of the files
    if (isinstance(entry, dict) and entry.get("signature") == signature and isinstance(entry.get("sha256"), str)
            and isinstance(entry.get("hashed_at_ns"), int) and newest + RACY_NS < entry["hashed_at_ns"]):
        return entry["sha256"]
    hashed_at = time.time_ns()
    value = compute()
    memo[key] = {"signature": signature, "sha256": value, "hashed_at_ns": hashed_at}
    try:
        from ...core.io import atomic_write

        atomic_write(memo_path, json.dumps(memo))
    except OSError:
        pass  # a read-only cache only costs the hashing time
    return value


def content_hash(path: str | Path) -> str:
    """sha256 over the sorted relative paths and bytes of every file below ``path`` (hidden files skipped)."""
    root = Path(path)
    files = files_of(root)
    stats = [[rel, *_signature(f)] for rel, f in files]
    return _memoized("tree", root, stats, lambda: _content_hash(files))


def tree_hash(path: str | Path) -> str:
    """``content_hash`` computed now, never memoized (for a folder that is about to move)."""
    return _content_hash(files_of(Path(path)))


def _content_hash(files: list[tuple[str, Path]], chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    for rel, file in files:
        digest.update(rel.encode() + b"\0")
        with open(file, "rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def file_hash(path: str | Path) -> str:
    """sha256 of one file's bytes (remembered by its stat signature, as content_hash)."""
    path = Path(path)
    return _memoized("file", path, [_signature(path)], lambda: sha256_of_file(path))


def sha256_of_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
