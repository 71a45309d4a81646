"""The static import check of many packages in one Node process (issue 25): each package's
verdict is the one the single check gives it, nothing is ever evaluated, and a package that
hangs or kills the checker does not change another's verdict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalogue.manifest.loader import load_package
from pluginhost.codecheck import CodeVerdict, StaticChecker, package_code_static_check

PLUGIN_MD = """---
description: The {name} package.
entry: ./server/index.js
---
Notes.
"""

GOOD = 'import { helper } from "./helper.js";\nexport default function register() { helper(); }\n'
HELPER = "export function helper() { return 1; }\n"


def package(root: Path, name: str, entry: str, files: dict[str, str] | None = None):
    folder = root / name
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(PLUGIN_MD.format(name=name))
    (folder / "server" / "index.js").write_text(entry)
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    result = load_package(folder)
    assert result.ok, result.errors
    return result.manifest


@pytest.fixture
def mixed(tmp_path):
    """Good and bad packages, in an order that puts each bad one between good ones."""
    marker = tmp_path / "evaluated"
    return [
        package(tmp_path, "good-one", GOOD, {"server/helper.js": HELPER}),
        package(tmp_path, "syntax", GOOD, {"server/helper.js": "export function helper( {\n"}),
        package(tmp_path, "good-two", "export default () => 1;\n"),
        package(tmp_path, "builtin", 'import fs from "node:fs";\nexport default () => fs;\n'),
        package(tmp_path, "missing", 'import { x } from "./nowhere.js";\nexport default x;\n'),
        package(tmp_path, "outside", 'import "../../good-one/server/helper.js";\n'),
        # Evaluated, this would hang the checker and write a file; parsed, it does neither.
        package(
            tmp_path,
            "would-run",
            f'while (true) {{}}\nrequire("fs").writeFileSync({str(marker)!r}, "ran");\n',
        ),
        package(tmp_path, "bare", 'import left from "left-pad";\nexport default left;\n'),
        package(tmp_path, "good-three", GOOD, {"server/helper.js": HELPER}),
    ], marker


def test_a_batch_gives_each_package_the_single_checks_verdict(mixed):
    manifests, marker = mixed
    alone = [package_code_static_check(m) for m in manifests]
    with StaticChecker() as checker:
        together = [checker.check(m) for m in manifests]
        pid = checker._process.pid
    assert together == alone
    codes = {m.id: (v.ok, v.code) for m, v in zip(manifests, together, strict=True)}
    assert codes == {
        "good-one": (True, ""),
        "syntax": (False, "module_syntax_error"),
        "good-two": (True, ""),
        "builtin": (False, "plugin_import_refused"),
        "missing": (False, "module_not_found"),
        "outside": (False, "plugin_import_refused"),
        "would-run": (True, ""),
        "bare": (False, "plugin_import_refused"),
        "good-three": (True, ""),
    }
    assert "server/helper.js:2" in together[1].message  # the line of the syntax error
    assert not marker.exists()  # parsed, never run
    assert pid  # one process served them all
    assert checker._process is None  # and it is gone after the batch


def test_hostile_files_in_a_batch_change_no_other_verdict(tmp_path):
    first = package(tmp_path, "first", GOOD, {"server/helper.js": HELPER})
    fifo = package(tmp_path, "fifo", GOOD, {"server/helper.js": HELPER})
    deep = package(tmp_path, "deep", "export default " + "(" * 20000 + "1" + ")" * 20000 + ";\n")
    last = package(tmp_path, "last", GOOD, {"server/helper.js": HELPER})
    # Swapped for a FIFO after the loader saw a plain file (the loader refuses FIFOs): the
    # checker must not open it (a read would block), only report it.
    helper = Path(fifo.path) / "server" / "helper.js"
    helper.unlink()
    os.mkfifo(helper)
    with StaticChecker(timeout=20) as checker:
        verdicts = [checker.check(m) for m in (first, fifo, deep, last)]
    assert verdicts[0] == CodeVerdict(True) and verdicts[3] == CodeVerdict(True)
    assert verdicts[1].code == "module_not_found"
    assert verdicts[2] == package_code_static_check(deep)
    assert verdicts == [package_code_static_check(m) for m in (first, fifo, deep, last)]


def test_a_package_past_its_deadline_times_out_alone(tmp_path):
    first = package(tmp_path, "first", GOOD, {"server/helper.js": HELPER})
    slow = package(tmp_path, "slow", GOOD, {"server/helper.js": HELPER})
    last = package(tmp_path, "last", 'import "./nope.js";\n')
    # Far more code than can be parsed within the deadline given to this package alone.
    (Path(slow.path) / "server" / "helper.js").write_text(
        "export function helper() { return 1; }\n" + "x;\n" * 4_000_000
    )
    with StaticChecker() as checker:
        verdicts = [checker.check(first)]
        checker.timeout = 0.05
        verdicts.append(checker.check(slow))
        assert checker._process is None  # the stalled process was stopped
        checker.timeout = 30
        verdicts.append(checker.check(last))
    assert verdicts[0] == CodeVerdict(True)
    assert verdicts[1].code == "static_check_timeout"
    assert verdicts[2] == package_code_static_check(last)
    assert verdicts[2].code == "module_not_found"


def test_a_checker_that_dies_fails_only_the_package_it_was_checking(tmp_path, monkeypatch):
    manifests = [
        package(tmp_path, "before", GOOD, {"server/helper.js": HELPER}),
        package(tmp_path, "victim", GOOD, {"server/helper.js": HELPER}),
        package(tmp_path, "after", 'import fs from "node:child_process";\n'),
    ]
    checker = StaticChecker()
    real_start = checker._start

    def start_then_kill_for_the_victim():
        process = real_start()
        if current[0] == "victim":
            process.kill()
            process.wait()
        return process

    current = [""]
    monkeypatch.setattr(checker, "_start", start_then_kill_for_the_victim)
    verdicts = []
    with checker:
        for manifest in manifests:
            current[0] = manifest.id
            verdicts.append(checker.check(manifest))
    assert verdicts[0] == CodeVerdict(True)
    assert verdicts[1].code == "static_check_failed"
    assert verdicts[2].code == "plugin_import_refused"
    assert verdicts[2] == package_code_static_check(manifests[2])


def test_a_replaced_process_gives_the_same_verdicts(mixed, monkeypatch):
    """The checker is replaced every RECYCLE_AFTER packages (Node's time per package grew with
    the packages one process had parsed): the verdicts are the single checks' all the same."""
    from pluginhost import codecheck

    manifests, _ = mixed
    alone = [package_code_static_check(m) for m in manifests]
    monkeypatch.setattr(codecheck, "RECYCLE_AFTER", 2)
    pids = []
    with StaticChecker() as checker:
        together = []
        for manifest in manifests:
            together.append(checker.check(manifest))
            pids.append(checker._process.pid if checker._process else None)
    assert together == alone
    # Nine packages, two a process (a timed-out or killed one ends its process early).
    assert len({p for p in pids if p}) >= 5
