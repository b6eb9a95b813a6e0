"""The documentation site builds offline in strict mode: a broken link, a missing anchor, a
page left out of the navigation or a docstring the API reference cannot render fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roformer_lit.commands import EXTRA_COMMANDS

REPO = Path(__file__).resolve().parents[1]


def test_the_docs_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "api" / "index.html").is_file()


def test_readme_links_point_at_files_that_exist():
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links to the docs"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, missing


def _readme_command_list() -> str:
    """The README's "One command line" bullet, from its bold title to the next bullet."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("**One command line**")
    return text[start : text.index("\n- ", start)]


@pytest.mark.parametrize("command", ["fit", "validate", *EXTRA_COMMANDS])
def test_the_readme_lists_every_command(command):
    """Every subcommand ``python -m roformer_lit --help`` lists is in the README's list."""
    assert f"`{command}`" in _readme_command_list()
