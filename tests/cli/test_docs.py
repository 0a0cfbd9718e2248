"""The README and docs/ as a user reads them: every `fasteval` command line in their code blocks names a command
that exists and only options that command takes, so a renamed option fails here, not in a user's terminal. (What
the examples print is held by the tests that run them: the check session and the normalisation table in
tests/models/test_fidelity.py, the protocol paragraph there too, the glucose file in
tests/protocol/test_protocol_files.py, the training example in tests/runs/test_training.py.)"""
from __future__ import annotations

import re
import shlex

import pytest

from fakes import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(bash|console|sh)\n(.*?)^```", re.M | re.S)


def command_lines(text: str) -> list[list[str]]:
    """The `fasteval ...` commands of a page's shell blocks, as words (`.venv/bin/`, `&&` chains, `\\`
    continuations and comments allowed; in a console block only the `$ ` lines, the rest is output)."""
    out = []
    for kind, block in BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            if kind == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words and words[0].rsplit("/", 1)[-1] == "fasteval":
                    out.append(words)
    return out


def test_the_pages_exist_and_the_readme_is_short():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "the README is where a newcomer starts: the reference is docs/"
    for link in re.findall(r"\]\((docs/[^)#]+|core/protocol/PROTOCOL.md)\)", readme):
        assert (ROOT / link).is_file(), link
    for page in PAGES[1:]:
        for link in re.findall(r"\]\(([a-z_]+\.md)\)", page.read_text()):
            assert (page.parent / link).is_file(), (page.name, link)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_in_the_docs_takes_its_options(page):
    import typer.main

    from fasteval.cli.main import app

    group = typer.main.get_command(app)
    for line in command_lines(page.read_text()):
        words = line[1:]
        if words[0].startswith("--"):  # fasteval --version, --help
            assert words[0] in {o for p in group.params for o in p.opts} | {"--help"}, line
            continue
        command = group.commands.get(words[0])
        assert command is not None, f"{page.name}: no command {words[0]!r} in {line!r}"
        known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        for word in words[1:]:
            if word.startswith("--"):
                assert word.split("=", 1)[0] in known, f"{page.name}: {words[0]} has no option {word} ({line!r})"


def test_the_commands_are_found():
    """The collector itself: the README's commands are found (a regex that matched nothing would pass above)."""
    found = command_lines((ROOT / "README.md").read_text())
    assert [".venv/bin/fasteval", "sweep"] in found
    assert ["fasteval", "check", "2 kilometers", "2000 meters", "2 meters"] in found
    assert ["fasteval", "drift", "--save-receipt", "minilm.receipt", "all-MiniLM-L6-v2"] in found
    assert not any(words[1].endswith(":") for words in found), "a console block's output is not a command"
