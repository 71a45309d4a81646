"""The loader, codec and runner are a plain library: no Django, usable from any tool."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.sources.conftest import EXAMPLE, REPO


def test_the_library_imports_no_django_and_loads_the_example() -> None:
    code = (
        "import json, sys\n"
        "from sources.manifest import load_source_plugin\n"
        "import sources.runner\n"
        f"r = load_source_plugin({str(EXAMPLE)!r})\n"
        "print(json.dumps({'ok': r.ok, 'django': [m for m in sys.modules if m.split('.')[0] == 'django'],"
        " 'key': r.manifest.codec().resolve_url('https://feeds.example/news/items/4').key}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == {"ok": True, "django": [], "key": "news#4"}
