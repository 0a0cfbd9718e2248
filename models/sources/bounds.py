"""What a model folder brings, bounded and checked before any heavy work: its JSON files (regular files of a
bounded size that parse), its safetensors headers (the form the format defines, offsets inside the file), and its
config's declared depth against the layers its weights hold. A folder that fails one of them is refused in one line
naming the file, before torch builds anything (a config declaring 10,000 layers beside 6 was built for minutes
towards 70 GB; a tokenizer.json linked to /dev/zero was read to 6 GB).

Reading these imports nothing heavy.
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

from ...core.errors import ModelError, first_line

MIB = 2**20
# The largest JSON file a model folder may bring: configs are a few kilobytes; the largest tokenizer.json of a
# popular model is a few tens of megabytes (Gemma 3's 33 MB, XLM-R's 17 MB).
MAX_CONFIG_BYTES = 16 * MIB
MAX_TOKENIZER_BYTES = 256 * MIB
# A safetensors header is JSON describing the tensors (the format caps it at 100 MB).
MAX_SAFETENSORS_HEADER_BYTES = 100 * MIB
REPAIR = "repair or re-download the model folder."
# config.json's names for the number of transformer layers, by architecture family
DEPTH_FIELDS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
# a transformer layer's index in a weight's name: encoder.layer.5.attention..., model.layers.11.mlp..., h.3.attn...
_LAYER = re.compile(r"(?:^|\.)(?:layer|layers|h|block|blocks)\.(\d+)\.")


def checked_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> Path:
    """``path`` when it is a regular file (a link to one counts) of at most ``limit`` bytes; one line otherwise
    (a device, a FIFO, a folder, a file too large to be what it says)."""
    import stat

    try:
        st = path.stat()
    except OSError as err:
        raise ModelError(f"Cannot read {path}: {err.strerror or err}.", REPAIR) from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{path} is not a regular file.", REPAIR)
    if st.st_size > limit:
        raise ModelError(f"{path} has {st.st_size:,} bytes, more than such a file ever needs "
                         f"({limit // MIB} MiB).", REPAIR)
    return path


def read_json_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """A model folder's JSON file, bounded (``checked_file``) and parsed; one line naming it when it is not JSON."""
    checked_file(path, limit)
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as err:
        raise ModelError(f"Cannot read {path}: {first_line(err, 120)}.", REPAIR) from None


def safetensors_header(path: Path) -> dict[str, dict]:
    """The tensors a safetensors file declares (name -> {"dtype", "shape", "data_offsets"}), its header checked to
    have the format's form (a JSON object of such entries, shapes of whole numbers >= 0, offsets inside the file)
    before anything trusts it; one line naming the file otherwise."""
    def bad(why: str) -> ModelError:
        return ModelError(f"{path} is not a safetensors file ({why}).", REPAIR)

    try:
        with path.open("rb") as f:
            file_size = path.stat().st_size
            (size,) = struct.unpack("<Q", f.read(8))
            if size > min(MAX_SAFETENSORS_HEADER_BYTES, max(file_size - 8, 0)):
                raise bad(f"its header claims {size} bytes")
            header = json.loads(f.read(size).decode("utf-8"))
    except (OSError, ValueError, struct.error) as err:
        raise bad(first_line(err, 80)) from None
    if not isinstance(header, dict):
        raise bad("its header is not a JSON object")
    data_size = file_size - 8 - size
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if (not isinstance(entry.get("dtype") if isinstance(entry, dict) else None, str)
                or not isinstance(shape, list) or not all(_whole(d) for d in shape)
                or not isinstance(offsets, list) or len(offsets) != 2 or not all(_whole(o) for o in offsets)
                or not offsets[0] <= offsets[1] <= data_size):
            raise bad(f"tensor {str(name)[:60]!r} is declared as {json.dumps(entry)[:80]}")
        tensors[str(name)] = entry
    return tensors


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def weight_names(transformer: Path) -> list[str] | None:
    """The names of the tensors a transformer folder's safetensors weights hold (one file or an index's shards),
    read from their headers; None where the weights are not safetensors."""
    single = transformer / "model.safetensors"
    if single.is_file():
        return list(safetensors_header(single))
    index = transformer / "model.safetensors.index.json"
    if index.is_file():
        listed = read_json_file(index)
        shards = listed.get("weight_map") if isinstance(listed, dict) else None
        if not isinstance(shards, dict):
            raise ModelError(f"{index} has no weight_map.", REPAIR)
        names: list[str] = []
        for shard in sorted({str(s) for s in shards.values()}):
            target = transformer / shard
            if not target.is_file() or target.resolve().parent != transformer.resolve():
                raise ModelError(f"{index} names the shard {shard!r}, which is not a file beside it.", REPAIR)
            names.extend(safetensors_header(target))
        return names
    return None


def check_depth(transformer: Path, config: dict) -> None:
    """One line, before any model is built, when config.json declares another number of layers than its weights
    hold (a config edited to 10,000 layers beside 6 layers of weights would be built, randomly initialised, to
    tens of gigabytes), or any declared layer has no weights. Folders whose weights are not safetensors, or whose
    tensor names number no layers, are left to transformers."""
    field = next((f for f in DEPTH_FIELDS if _whole(config.get(f))), None)
    names = weight_names(transformer)
    if field is None or not names:
        return
    held = {int(m.group(1)) for name in names if (m := _LAYER.search(name))}
    if not held:
        return
    declared = int(config[field])
    missing = sorted(set(range(declared)) - held)
    if declared != len(held) or missing:
        raise ModelError(f"{transformer / 'config.json'} declares {field} = {declared}, but the weights hold "
                         f"{len(held)} layer(s){f' (none for layer {missing[0]})' if missing else ''}.",
                         "restore the config.json that came with the weights, or re-download the model folder.")


def read_tokenizer(path: Path):
    """A ``tokenizers.Tokenizer`` from a model folder's tokenizer.json, bounded (``checked_file``); one line
    naming the file when tokenizers cannot read it."""
    from tokenizers import Tokenizer

    checked_file(path, MAX_TOKENIZER_BYTES)
    try:
        return Tokenizer.from_file(str(path))
    except Exception as err:  # noqa: BLE001 - tokenizers raises its own exception type
        raise ModelError(f"Cannot read the tokenizer {path}: {first_line(err, 120)}.",
                         "repair or re-download the model folder (a fast tokenizer's tokenizer.json).") from None
