"""A fingerprint of the code that judges packages, so a new hub release re-judges them.

The catalogue and the source-plugin sync skip a folder whose content hash is unchanged. When the
loader's rules change (an upgrade), an unchanged folder must still get the new verdict: each row
stores the fingerprint of the rules that judged it, and a different fingerprint counts as a change.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path


@cache
def code_fingerprint(*folders: Path) -> str:
    """sha256 (hex, 16 characters) of the .py and .json files under folders, names included."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
