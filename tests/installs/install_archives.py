"""Package folders and ZIPs the installs tests build (a module of its own, not conftest: every
test folder has a conftest.py, and `from conftest import` would find another folder's)."""

from __future__ import annotations

import io
import zipfile

PLUGIN_MD = """---
id: {id}
version: {version}
displayName: {name}
description: {description}
author:
  name: Ada Author
{extra}---
Be helpful.
"""


def plugin_files(
    package_id: str, *, version: str = "1.0.0", extra: str = "", code: bool = False
) -> dict[str, bytes]:
    files = {
        "PLUGIN.md": PLUGIN_MD.format(
            id=package_id,
            version=version,
            name=package_id.title(),
            description=f"The {package_id} package.",
            extra=extra,
        ).encode(),
        "README.md": f"# {package_id}\n".encode(),
    }
    if code:
        files["server/index.js"] = b"export default () => 'hello';\n"
    return files


def make_zip(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)
    return buffer.getvalue()


WORLD_YAML = """id: {id}
name: {name}
description: A world to play in.
version: "1.0"
author:
  name: Ada Author
plugins: [{plugins}]
"""


def world_files(
    world_id: str, *, plugins: tuple[str, ...] = (), **extra: bytes
) -> dict[str, bytes]:
    """A world folder in the hub's format (docs/worlds.md): world.yaml and one character."""
    files = {
        "world.yaml": WORLD_YAML.format(
            id=world_id, name=world_id.title(), plugins=", ".join(plugins)
        ).encode(),
        "characters/characters.json": b'[{"id": "wren", "name": "Wren", "type": "player"}]',
    }
    return {**files, **extra}
