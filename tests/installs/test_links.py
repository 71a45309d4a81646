"""Links read as Covel reads GitHub links, plus any https git remote and loopback http."""

from __future__ import annotations

import pytest

from installs.archive import Entry
from installs.gitsource import Location, SourceError, package_folders, parse_location

GH = "https://github.com"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            f"{GH}/covel-ai/covel-plugins",
            Location(f"{GH}/covel-ai/covel-plugins.git", f"{GH}/covel-ai/covel-plugins", None, ""),
        ),
        (
            f"{GH}/covel-ai/covel-plugins.git/",
            Location(f"{GH}/covel-ai/covel-plugins.git", f"{GH}/covel-ai/covel-plugins", None, ""),
        ),
        (
            f"{GH}/o/r/tree/main/plugins/mimo-tts",
            Location(f"{GH}/o/r.git", f"{GH}/o/r", "main", "plugins/mimo-tts"),
        ),
        (
            f"{GH}/o/r/tree/mimo-tts%2Fv0.0.40/plugins/mimo-tts",
            Location(f"{GH}/o/r.git", f"{GH}/o/r", "mimo-tts/v0.0.40", "plugins/mimo-tts"),
        ),
        (
            "https://git.example.org/team/pkgs.git",
            Location(
                "https://git.example.org/team/pkgs.git",
                "https://git.example.org/team/pkgs.git",
                None,
                "",
            ),
        ),
        (
            "https://git.example.org/team/pkgs/-/tree/v2/a/b",
            Location(
                "https://git.example.org/team/pkgs",
                "https://git.example.org/team/pkgs",
                "v2",
                "a/b",
            ),
        ),
        (
            "https://git.example.org/pkgs.git#main:plugins/x",
            Location(
                "https://git.example.org/pkgs.git",
                "https://git.example.org/pkgs.git",
                "main",
                "plugins/x",
            ),
        ),
        (
            "http://127.0.0.1:8080/pkgs.git",
            Location("http://127.0.0.1:8080/pkgs.git", "http://127.0.0.1:8080/pkgs.git", None, ""),
        ),
    ],
)
def test_links_are_read_as_covel_reads_them(url, expected):
    assert parse_location(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org/pkgs.git",  # plain http off loopback
        "http://10.0.0.1/pkgs.git",
        "ftp://example.org/x",
        "file:///etc",
        "ssh://git@example.org/x.git",
        "https://user:pw@example.org/x.git",
        "https://example.org/x.git?a=1",
        f"{GH}/o/r/blob/main/x",
        f"{GH}/o/r/tree/main/../x",
        f"{GH}/o",
        "https://example.org/x.git#main:../../etc",
        "https://example.org/x y.git",
    ],
)
def test_other_links_are_refused(url):
    with pytest.raises(SourceError):
        parse_location(url)


def test_package_folders_finds_top_packages_and_skips_hidden_and_vendored():
    files = [
        "plugins/a/PLUGIN.md",
        "plugins/a/runtimes/x/RUNTIME.md",
        "plugins/b/PLUGIN.md",
        ".hidden/c/PLUGIN.md",
        "node_modules/d/PLUGIN.md",
        "plugins/a/examples/e/PLUGIN.md",
    ]
    assert package_folders([Entry(p, b"") for p in files]) == ["plugins/a", "plugins/b"]
    assert package_folders([Entry("PLUGIN.md", b""), Entry("sub/PLUGIN.md", b"")]) == [""]
    with pytest.raises(SourceError):
        package_folders([Entry(f"p{i}/PLUGIN.md", b"") for i in range(21)])
