"""A package's README.md (and prose PLUGIN.md body) as safe HTML for the detail page.

Markdown is rendered by markdown-it-py with raw HTML off, then sanitised by nh3 anyway (package
text is untrusted). Relative links and images are resolved inside the package folder: a target
that exists there (and is a file we serve) becomes a /packages/<id>/files/<path> address; any
other relative target, and every non-web scheme, is dropped.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import nh3
from markdown_it import MarkdownIt

# What /packages/<id>/files/ serves, by suffix: images and plain text only, never HTML or JS.
SERVED_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".json": "text/plain; charset=utf-8",
    ".yaml": "text/plain; charset=utf-8",
}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"}
FILE_MAX_BYTES = 2 * 1024 * 1024

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}
_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def package_file(*, package_dir: Path, relative: str) -> Path | None:
    """The file `relative` names inside package_dir, or None: outside the folder (after
    resolving .. and symlinks), hidden, missing, too big, or of a type we do not serve."""
    if not relative or "\x00" in relative or relative.startswith(("/", "\\")):
        return None
    parts = Path(relative).parts
    if any(part.startswith(".") for part in parts):
        return None
    root = package_dir.resolve()
    try:
        target = (root / relative).resolve()
        target.relative_to(root)
    except (OSError, ValueError):
        return None
    if target.suffix.lower() not in SERVED_TYPES or not target.is_file():
        return None
    if target.stat().st_size > FILE_MAX_BYTES:
        return None
    return target


def _resolve(url: str, *, package_id: str, package_dir: Path, image: bool) -> str | None:
    """The address to keep for a link or image, or None to drop it."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        if image:
            return None  # a remote image would track whoever opens the page
        return url if parts.scheme in {"https", "http", "mailto"} else None
    if not parts.path:
        return url if parts.fragment and not image else None  # an in-page anchor
    relative = posixpath.normpath(unquote(parts.path))
    target = package_file(package_dir=package_dir, relative=relative)
    if target is None or (image and target.suffix.lower() not in IMAGE_SUFFIXES):
        return None
    rel = target.relative_to(package_dir.resolve()).as_posix()
    return f"/packages/{quote(package_id)}/files/{quote(rel)}"


def markdown_html(text: str, *, package_id: str, package_dir: Path) -> str:
    """Sanitised HTML for Markdown written by a package author."""
    tokens = _md.parse(text)
    for token in tokens:
        for child in [token, *(token.children or [])]:
            if child.type == "image":
                src = _resolve(
                    str(child.attrGet("src") or ""),
                    package_id=package_id,
                    package_dir=package_dir,
                    image=True,
                )
                if src is None:
                    # Keep the words, drop the picture.
                    child.type = "text"
                    child.tag = ""
                    child.content = child.content or str(child.attrGet("alt") or "")
                    child.attrs = {}
                    child.children = None
                else:
                    child.attrSet("src", src)
            elif child.type == "link_open":
                href = _resolve(
                    str(child.attrGet("href") or ""),
                    package_id=package_id,
                    package_dir=package_dir,
                    image=False,
                )
                if href is None:
                    child.attrs.pop("href", None)
                else:
                    child.attrSet("href", href)
    html = _md.renderer.render(tokens, _md.options, {})
    return nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes={"https", "http", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def package_readme_html(*, package_id: str, package_dir: Path, text: str | None) -> str:
    """The package's README.md (as the loader read it at sync, Package.readme) as safe HTML, or
    "" when it has none. Rendered here, not at sync: its links and images resolve against the
    files the folder holds when the page is shown (a stat each, no read)."""
    if not text:
        return ""
    return markdown_html(text, package_id=package_id, package_dir=package_dir)
