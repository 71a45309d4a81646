"""The YAML frontmatter is data only: safe parsing, limits and clear errors."""

from __future__ import annotations

import time
from pathlib import Path

from catalogue.manifest import load_package
from catalogue.manifest.frontmatter import MAX_FRONTMATTER_BYTES, split_markdown

from .conftest import codes

P = "PLUGIN.md"
OK_TAIL = "description: Keeps notes.\n"


def write_raw(tmp_path: Path, content: bytes | str, name: str = "notes") -> Path:
    root = tmp_path / name
    root.mkdir()
    data = content.encode("utf-8") if isinstance(content, str) else content
    (root / P).write_bytes(data)
    return root


def test_it_refuses_duplicate_keys_with_the_path_of_the_second(tmp_path: Path) -> None:
    root = write_raw(tmp_path, "---\ndescription: a\nauthor:\n  name: x\n  name: y\n---\n")
    assert codes(load_package(root)) == [(P, "/author/name", "duplicate-key")]


def test_it_refuses_python_tags_as_executable_frontmatter(tmp_path: Path) -> None:
    root = write_raw(
        tmp_path,
        f"---\n{OK_TAIL}displayName: !!python/object/apply:os.system ['touch /tmp/pwned']\n---\n",
    )
    result = load_package(root)
    assert codes(result) == [(P, "/displayName", "executable-frontmatter")]
    assert "python/object/apply:os.system" in result.errors[0].message
    assert not Path("/tmp/pwned").exists()


def test_it_refuses_custom_and_non_json_tags(tmp_path: Path) -> None:
    root = write_raw(
        tmp_path,
        f"---\n{OK_TAIL}displayName: !secret x\nlicense: !!binary aGk=\ntags: !!set {{a: null}}\n---\n",
    )
    assert codes(load_package(root)) == [
        (P, "/displayName", "executable-frontmatter"),
        (P, "/license", "executable-frontmatter"),
        (P, "/tags", "executable-frontmatter"),
    ]


def test_plain_json_tags_are_fine(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}version: !!str 1.0\n---\n")
    result = load_package(root)
    assert result.ok, result.errors
    assert result.manifest is not None and result.manifest.version == "1.0"


def test_a_billion_laughs_is_refused_fast_without_expansion(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    root = write_raw(tmp_path, "---\n" + OK_TAIL + "\n".join(lines) + "\n---\n")
    started = time.perf_counter()
    result = load_package(root)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0
    found = codes(result)
    assert (P, "/a1/0", "yaml-alias") in found
    assert all(code in ("yaml-alias", "unknown-field") for _, _, code in found)


def test_any_alias_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}displayName: &n Notes\nlicense: *n\n---\n")
    assert codes(load_package(root)) == [(P, "/license", "yaml-alias")]


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}tags: &t [a, *t]\n---\n")
    result = load_package(root)
    assert [c for _, _, c in codes(result)][:1] in (["yaml-alias"], ["yaml-syntax"])


def test_frontmatter_over_the_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    filler = "x" * (MAX_FRONTMATTER_BYTES + 10)
    root = write_raw(tmp_path, f"---\n{OK_TAIL}displayName: {filler}\n---\n")
    result = load_package(root)
    assert codes(result) == [(P, "", "frontmatter-too-large")]
    assert str(MAX_FRONTMATTER_BYTES) in result.errors[0].message


def test_deep_flow_nesting_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}tags: {'[' * 5000}{']' * 5000}\n---\n")
    assert codes(load_package(root)) == [(P, "", "frontmatter-too-deep")]


def test_deep_block_nesting_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}tags:\n{'- ' * 20000}x\n---\n")
    assert codes(load_package(root)) == [(P, "", "frontmatter-too-deep")]


def test_non_utf8_bytes_are_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, b"---\ndescription: caf\xe9\n---\n")
    result = load_package(root)
    assert codes(result) == [(P, "", "not-utf8")]
    assert result.raw is None


def test_a_missing_closing_line_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, "---\ndescription: a\n")
    assert codes(load_package(root)) == [(P, "", "frontmatter-unclosed")]


def test_a_file_without_frontmatter_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, "# Just markdown\n")
    assert codes(load_package(root)) == [(P, "", "frontmatter-missing")]


def test_frontmatter_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, "---\n- description\n- tags\n---\n")
    assert codes(load_package(root)) == [(P, "", "frontmatter-not-mapping")]


def test_invalid_yaml_names_the_line_of_the_file(tmp_path: Path) -> None:
    root = write_raw(tmp_path, "---\ndescription: a\ntags: [a, b\n---\n")
    result = load_package(root)
    assert [c for _, _, c in codes(result)] == ["yaml-syntax"]
    assert "line " in result.errors[0].message


def test_dates_stay_strings(tmp_path: Path) -> None:
    root = write_raw(
        tmp_path, f"---\n{OK_TAIL}version: 2024-01-01\nlicense: 2001-12-14t21:59:43.10-05:00\n---\n"
    )
    result = load_package(root)
    assert result.ok, result.errors
    assert result.manifest is not None
    assert result.manifest.version == "2024-01-01"
    assert result.manifest.data["license"] == "2001-12-14t21:59:43.10-05:00"


def test_non_finite_numbers_and_nul_are_refused(tmp_path: Path) -> None:
    root = write_raw(
        tmp_path,
        f'---\n{OK_TAIL}displayName: "a\\0b"\ncontributes: {{settings: [{{key: k, type: number, label: K, default: .nan}}]}}\n---\n',
    )
    assert codes(load_package(root)) == [
        (P, "/displayName", "yaml-invalid-scalar"),
        (P, "/contributes/settings/0/default", "yaml-invalid-scalar"),
    ]


def test_unpaired_surrogates_are_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f'---\n{OK_TAIL}displayName: "\\ud800"\n"\\udfff": x\n---\n')
    assert codes(load_package(root)) == [
        (P, "/displayName", "yaml-invalid-scalar"),
        (P, "", "yaml-invalid-scalar"),
    ]


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    root = write_raw(tmp_path, f"---\n{OK_TAIL}---\n" + "x" * (1024 * 1024 + 1))
    assert codes(load_package(root)) == [(P, "", "file-too-large")]


def test_bom_and_crlf_are_accepted() -> None:
    parsed = split_markdown("\ufeff---\r\ndescription: a\r\n---\r\nBody\r\n".encode(), P)
    assert parsed.ok and parsed.data == {"description": "a"} and parsed.body == "Body\n"


def test_yaml_1_2_booleans_only(tmp_path: Path) -> None:
    parsed = split_markdown(b"---\na: yes\nb: true\nc: 0x10\nd: 1_000\n---\n", P)
    assert parsed.data == {"a": "yes", "b": True, "c": 16, "d": 1000}
