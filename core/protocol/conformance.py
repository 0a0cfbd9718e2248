"""The texts ``fasteval drift`` compares beyond the protocol's: the conformance set (``conformance.toml``, groups
of texts each probing one way a deployment can differ) and a user's own texts file. Read here, in the protocol
room, and handed to the drift exam as groups (exams read no files)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

CONFORMANCE_FILE = Path(__file__).resolve().parent / "conformance.toml"


@dataclass
class TextGroup:
    name: str
    probes: str
    texts: list[str]


def conformance_groups(path: Path = CONFORMANCE_FILE) -> list[TextGroup]:
    """The conformance set: each group's name, what it probes, and its texts (long ones built from repeats)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    groups = []
    for g in doc.get("groups", []):
        texts = list(g.get("texts", [])) + [str(item["text"]) * int(item["times"]) for item in g.get("long", [])]
        groups.append(TextGroup(str(g["name"]), str(g.get("probes", "")), texts))
    return groups


def user_groups(path: Path) -> list[TextGroup]:
    """A user's texts (``--texts FILE``): one text a line ('#' comments, blank lines skipped), one group."""
    from ..io import read_text_lines

    lines = read_text_lines(path, "texts file", "pass a UTF-8 text file with one text a line.")
    texts = [ln for ln in (raw.split("#", 1)[0].rstrip("\n") for raw in lines) if ln.strip()]
    if not texts:
        raise InputError(f"The texts file {path} has no text.", "write one text a line ('#' starts a comment).")
    return [TextGroup(f"file:{Path(path).name}", "your own texts", texts)]
