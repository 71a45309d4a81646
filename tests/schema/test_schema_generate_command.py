"""`manage.py schemas_generate [--check]`: the committed pages are fresh; a stale one is named.

Tampering happens on a copy in tmp_path (--docs-dir), never on docs/reference itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "reference"
PAGES = ("plugin-manifest.md", "runtime-manifest.md", "plugin-locale.md")


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    target = tmp_path / "reference"
    shutil.copytree(DOCS, target)
    return target


def test_the_committed_pages_are_fresh(capsys):
    call_command("schemas_generate", "--check")
    assert "up to date (3 files)" in capsys.readouterr().out


def test_check_names_a_tampered_page_and_writes_nothing(docs_copy):
    page = docs_copy / "plugin-manifest.md"
    tampered = page.read_text(encoding="utf-8").replace("| `kind` |", "| `kinds` |")
    page.write_text(tampered, encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        call_command("schemas_generate", "--check", "--docs-dir", str(docs_copy))
    assert caught.value.returncode == 1
    assert "plugin-manifest.md is stale" in str(caught.value)
    assert "runtime-manifest.md" not in str(caught.value)
    assert page.read_text(encoding="utf-8") == tampered


def test_check_names_a_missing_page(docs_copy):
    (docs_copy / "runtime-manifest.md").unlink()
    with pytest.raises(CommandError, match="runtime-manifest.md is missing"):
        call_command("schemas_generate", "--check", "--docs-dir", str(docs_copy))


def test_generate_repairs_the_pages_then_check_passes(docs_copy, capsys):
    (docs_copy / "plugin-manifest.md").write_text("stale\n", encoding="utf-8")
    (docs_copy / "plugin-locale.md").unlink()
    call_command("schemas_generate", "--docs-dir", str(docs_copy))
    out = capsys.readouterr().out
    assert "wrote" in out and "plugin-manifest.md" in out and "unchanged" in out
    for name in PAGES:
        assert (docs_copy / name).read_bytes() == (DOCS / name).read_bytes()
    call_command("schemas_generate", "--check", "--docs-dir", str(docs_copy))


def test_the_real_command_exits_1_on_a_stale_page_and_0_when_fresh(docs_copy):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    command = [
        sys.executable,
        "manage.py",
        "schemas_generate",
        "--check",
        "--docs-dir",
        str(docs_copy),
    ]
    fresh = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert fresh.returncode == 0, fresh.stderr
    (docs_copy / "runtime-manifest.md").write_text("# edited by hand\n", encoding="utf-8")
    stale = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1
    assert "runtime-manifest.md is stale" in stale.stderr
