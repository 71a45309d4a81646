"""What counts as server code and HTTP access, and when one set is within another."""

from __future__ import annotations

import hashlib
from pathlib import Path

from approvals.permissions import (
    describe,
    diff,
    is_empty,
    is_within,
    normalise_origin,
    permission_hash,
)


def compute(package):
    # What the sync does: the set from the loader's one read of the folder.
    from approvals.selectors import package_permission_set

    return package_permission_set(package=package)


def test_it_lists_entry_handlers_guards_and_tools_with_hashes(packages, db):
    package = packages.write(
        "notebook",
        manifest={"runtime": {"function": {}, "guard": "./guards/skip.js"}},
        files={
            "server/index.js": "import x from '../tools/save-note.js';\n",
            "tools/save-note.js": "export default () => 1;\n",
            "handler.js": "export default () => ({});\n",
            "guards/skip.js": "export default () => false;\n",
            "tests/helper.js": "export const leaked = true;\n",
            "lib/types.ts": "export const n: number = 1;\n",
            "data/table.json": "[1, 2]",
            "locales/fr.yaml": "PLUGIN.md: {}\n",
            "README.md": "not code",
        },
    )
    permissions = compute(package)
    by_path = {item["path"]: item for item in permissions["code"]}
    # Every file the host could import, any extension, any folder (tests/ too); the hub-only
    # text (Markdown, locales/) is never given to the host, so it is not part of the set.
    assert sorted(by_path) == [
        "data/table.json",
        "guards/skip.js",
        "handler.js",
        "lib/types.ts",
        "server/index.js",
        "tests/helper.js",
        "tools/save-note.js",
    ]
    assert by_path["tests/helper.js"]["roles"] == ["module"]
    assert by_path["lib/types.ts"]["roles"] == ["module"]
    assert by_path["data/table.json"]["roles"] == ["file the code can import"]
    assert by_path["server/index.js"]["roles"] == ["entry module"]
    assert by_path["handler.js"]["roles"] == ["function handler of runtime notebook"]
    assert by_path["guards/skip.js"]["roles"] == ["guard of runtime notebook"]
    assert by_path["tools/save-note.js"]["roles"] == ["tool module"]
    import hashlib

    assert (
        by_path["handler.js"]["sha256"]
        == hashlib.sha256(b"export default () => ({});\n").hexdigest()
    )
    assert permissions["http"] == []


def test_runtime_files_resolve_relative_to_their_runtime_md(packages, db):
    package = packages.write(
        "multi",
        runtimes={
            "summary": {
                "function": {"handler": "./summarise.js"},
                "permissions": {
                    "http": [{"origin": "https://API.Example.com:443/", "methods": ["post", "GET"]}]
                },
            },
            "chat": {"agent": {}},
        },
        files={"runtimes/summary/summarise.js": "export default () => ({});\n"},
    )
    permissions = compute(package)
    assert [item["path"] for item in permissions["code"]] == ["runtimes/summary/summarise.js"]
    assert permissions["code"][0]["roles"] == ["function handler of runtime multi/summary"]
    assert permissions["http"] == [
        {
            "runtime": "multi/summary",
            "origin": "https://api.example.com",
            "methods": ["GET", "POST"],
        }
    ]


def test_an_invalid_package_asks_for_what_its_files_say(packages, db):
    # The loader refuses it (an unknown field), yet approvals still list its handler by its
    # role and its runtime's grant, from the frontmatter the loader read as written.
    package = packages.write(
        "half-done",
        manifest={"unknownField": True},
        runtimes={
            "summary": {
                "function": {},
                "permissions": {"http": [{"origin": "https://api.example.com"}]},
            }
        },
        files={"runtimes/summary/handler.js": "export default () => ({});\n"},
    )
    permissions = compute(package)
    assert permissions["code"][0]["path"] == "runtimes/summary/handler.js"
    assert permissions["code"][0]["roles"] == ["function handler of runtime half-done/summary"]
    assert permissions["http"] == [
        {"runtime": "half-done/summary", "origin": "https://api.example.com", "methods": ["GET"]}
    ]


def test_a_linked_file_is_hashed_as_its_target(packages, db):
    package = packages.write(
        "linked", files={"server/index.js": "export default () => 1;\n", "lib/real.js": "x\n"}
    )
    (Path(package.source_dir) / "lib" / "alias.js").symlink_to("real.js")
    by_path = {item["path"]: item["sha256"] for item in compute(package)["code"]}
    assert by_path["lib/alias.js"] == by_path["lib/real.js"] == hashlib.sha256(b"x\n").hexdigest()


def test_methods_default_to_get_and_duplicates_merge(packages, db):
    package = packages.write(
        "grants",
        manifest={
            "permissions": {
                "http": [
                    {"origin": "https://a.example"},
                    {"origin": "https://a.example", "methods": ["DELETE"]},
                    {"origin": "https://b.example:8443", "methods": ["HEAD"]},
                ]
            }
        },
    )
    assert compute(package)["http"] == [
        {"runtime": None, "origin": "https://a.example", "methods": ["GET", "DELETE"]},
        {"runtime": None, "origin": "https://b.example:8443", "methods": ["HEAD"]},
    ]


def test_a_prompt_only_package_asks_for_nothing(packages, db):
    package = packages.write(
        "prompt-only", manifest={"runtime": {"schedule": {"stage": "narrative"}}}
    )
    assert is_empty(compute(package))


def test_origins_are_normalised():
    assert normalise_origin("HTTPS://Api.Example.COM:443") == "https://api.example.com"
    assert normalise_origin("https://api.example.com:8443") == "https://api.example.com:8443"
    assert normalise_origin("https://[::1]:9000") == "https://[::1]:9000"


CODE_A = {"path": "server/index.js", "sha256": "a" * 64, "roles": ["entry module"]}
GET_A = {"runtime": None, "origin": "https://a.example", "methods": ["GET"]}


def test_within_same_and_narrower_but_not_wider():
    approved = {
        "code": [CODE_A],
        "http": [{"runtime": None, "origin": "https://a.example", "methods": ["GET", "POST"]}],
    }
    assert is_within(approved, approved)
    assert is_within({"code": [CODE_A], "http": [GET_A]}, approved)  # fewer methods
    assert is_within({"code": [], "http": []}, approved)
    # A runtime may use what the package level grants, so moving a grant down is not wider.
    assert is_within({"code": [], "http": [{**GET_A, "runtime": "p/r"}]}, approved)
    assert not is_within({"code": [CODE_A], "http": [{**GET_A, "methods": ["DELETE"]}]}, approved)
    assert not is_within(
        {"code": [CODE_A], "http": [{**GET_A, "origin": "https://b.example"}]}, approved
    )
    assert not is_within({"code": [{**CODE_A, "sha256": "b" * 64}], "http": []}, approved)
    assert not is_within({"code": [CODE_A, {**CODE_A, "path": "tools/x.js"}], "http": []}, approved)
    # A runtime-level grant does not cover the package level (the entry module).
    runtime_only = {"code": [], "http": [{**GET_A, "runtime": "p/r"}]}
    assert not is_within({"code": [], "http": [GET_A]}, runtime_only)


def test_diff_and_description_speak_plainly():
    approved = {"code": [CODE_A], "http": [GET_A]}
    requested = {
        "code": [{**CODE_A, "sha256": "b" * 64}],
        "http": [
            {**GET_A, "methods": ["GET", "POST"]},
            {**GET_A, "runtime": "p/r", "origin": "https://c.example"},
        ],
    }
    rows = diff(requested, approved)
    assert rows["code"][0]["status"] == "changed" and rows["code"][0]["widens"]
    http = {row["what"]: row for row in rows["http"]}
    assert http["package: https://a.example"]["approved"] == "GET"
    assert http["package: https://a.example"]["requested"] == "GET, POST"
    assert http["package: https://a.example"]["widens"]
    assert http["runtime p/r: https://c.example"]["status"] == "added"
    lines = describe(requested)
    assert (
        "The entry module and every runtime may send GET, POST requests to https://a.example."
        in lines
    )
    assert "Runtime p/r may send GET requests to https://c.example." in lines
    assert permission_hash(requested) != permission_hash(approved)


def test_a_package_without_code_asks_for_nothing_even_with_data_files(packages, db):
    package = packages.write("lore", files={"data/table.json": "[1]", "schemas/x.json": "{}"})
    assert compute(package) == {"code": [], "http": []}


def test_special_files_and_links_out_are_never_opened_or_listed(packages, db, tmp_path):
    import os

    package = packages.write("hostile", files={"server/index.js": "export default () => {};\n"})
    from pathlib import Path

    root = Path(package.source_dir)
    os.mkfifo(root / "x.js")  # opening it for reading would block until a writer comes
    (tmp_path / "secret.js").write_text("export const key = 'outside';\n")
    os.symlink(tmp_path / "secret.js", root / "server" / "leak.js")
    paths = [item["path"] for item in compute(package)["code"]]
    assert paths == ["server/index.js"]
