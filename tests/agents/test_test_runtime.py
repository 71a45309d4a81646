"""manage.py test_runtime: offline runtime cases in mock mode, with their exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agent_helpers import PLUGINS, REPO, call, run_command, write_toolbox
from django.core.management.base import CommandError

AGENT_PACKAGES = ["notebook", "chronicle", "satchel", "rapport", "story-agent"]


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "test_runtime", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )


def write_cases(package: Path, cases: list[dict]) -> None:
    (package / "tests").mkdir(exist_ok=True)
    (package / "tests" / "runtime-cases.json").write_text(
        json.dumps({"cases": cases}), encoding="utf-8"
    )


@pytest.mark.parametrize("package", AGENT_PACKAGES)
def test_every_bundled_agent_package_ships_cases_that_pass(package: str):
    code, report, err = run_command(str(PLUGINS / package))
    assert code == 0, json.dumps(report, indent=2)
    assert err.strip().splitlines()[-1].startswith(f"PASS {package}: ")
    assert report["status"] == "ok" and report["mode"] == "mock" and report["pluginId"] == package
    assert report["cases"] and all(c["status"] == "passed" for c in report["cases"])
    assert {"runtimeResults", "pluginData", "events", "llmCalls"} <= set(
        report["cases"][0]["result"]
    )


def test_the_saved_data_and_the_model_calls_are_in_the_result():
    code, report, _ = run_command(
        str(PLUGINS / "notebook"), "--case", "saves-one-fact-from-the-narrative"
    )
    assert code == 0 and [c["name"] for c in report["cases"]] == [
        "saves-one-fact-from-the-narrative"
    ]
    result = report["cases"][0]["result"]
    assert result["pluginData"]["notes"] == [
        {
            "key": "north-gate-locked",
            "value": {
                "id": "north-gate-locked",
                "text": "The north gate is barred from the inside after dusk.",
            },
        }
    ]
    assert [r["runtimeId"] for r in result["runtimeResults"]] == ["storyteller", "notebook"]
    assert result["llmCalls"][0]["toolCalls"][0]["name"] == "save-note"


def test_a_broken_case_exits_1_and_names_the_failing_case(tmp_path: Path):
    package = tmp_path / "notebook"
    shutil.copytree(PLUGINS / "notebook", package)
    cases = json.loads((package / "tests" / "runtime-cases.json").read_text())["cases"]
    cases[1]["expect"]["runtimeResults"][0]["status"] = "success"  # the run really fails
    write_cases(package, cases)
    done = manage(str(package))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "failed"
    verdicts = {c["name"]: c["status"] for c in report["cases"]}
    assert verdicts == {
        "saves-one-fact-from-the-narrative": "passed",
        "a-bad-note-id-is-rejected-and-the-run-fails": "failed",
    }
    failing = report["cases"][1]["result"]["failures"][0]
    assert failing.startswith("runtime notebook ended failed, expected success")
    assert "failed cases: a-bad-note-id-is-rejected-and-the-run-fails" in done.stderr
    # The verdict for people is the last line, with the case's first failure above it.
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("FAIL notebook: 1 of 2 case(s) failed")
    assert lines[-2].startswith("  ✗ a-bad-note-id-is-rejected-and-the-run-fails: runtime notebook")


def test_bad_arguments_exit_2(tmp_path: Path):
    assert manage(str(tmp_path / "missing")).returncode == 2
    assert manage(str(PLUGINS / "notebook"), "--no-such-option").returncode == 2
    with pytest.raises(CommandError) as missing_case:
        run_command(str(PLUGINS / "notebook"), "--case", "nope")
    assert missing_case.value.returncode == 2 and "no case named 'nope'" in str(missing_case.value)
    with pytest.raises(CommandError) as no_cases:
        run_command(str(PLUGINS / "storyteller"))
    assert no_cases.value.returncode == 2 and "no runtime cases file" in str(no_cases.value)


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        (
            [{"name": "a", "llmResponses": [{"toolCalls": [{"arguments": "{}"}]}]}],
            "/cases/0/llmResponses/0/toolCalls/0/name is required",
        ),
        (
            [{"name": "a", "expect": {"runtimeResults": [{"runtimeId": "x", "status": "ok"}]}}],
            "/cases/0/expect/runtimeResults/0/status must be one of failed, skipped, success",
        ),
        ([{"name": "a"}, {"name": "a"}], "/cases/1/name repeats the case name 'a'"),
        ([{"name": "a", "expects": {}}], "/cases/0/expects is not a known field"),
    ],
)
def test_a_malformed_cases_file_names_the_file_the_path_and_the_rule(
    tmp_path: Path, cases, message
):
    package = tmp_path / "notebook"
    shutil.copytree(PLUGINS / "notebook", package)
    write_cases(package, cases)
    with pytest.raises(CommandError) as problem:
        run_command(str(package))
    assert problem.value.returncode == 2
    assert "runtime-cases.json:" in str(problem.value) and message in str(problem.value)


def test_an_rpc_action_prints_the_unsupported_notice_and_is_not_an_error(tmp_path: Path):
    package = tmp_path / "notebook"
    shutil.copytree(PLUGINS / "notebook", package)
    write_cases(
        package,
        [
            {"name": "by-command", "message": "/note gate"},
            {
                "name": "by-rpc",
                "rpc": {"action": "inspect-note", "payload": {}},
                "message": "I look.",
                "llmResponses": [
                    {"toolCalls": [call("save-note", {"id": "look", "text": "A look."})]}
                ],
                "expect": {"runtimeResults": [{"runtimeId": "notebook", "status": "success"}]},
            },
        ],
    )
    done = manage(str(package), "--pretty")
    assert done.returncode == 0, done.stdout
    notice = "Unsupported rpc: notebook/inspect-note. Verify with the server."
    assert done.stderr.count(notice) == 2
    # A copy outside the bundled folder is community code, run unapproved on purpose: it says so.
    assert "notebook is community code: test_runtime runs the author's code" in done.stderr
    assert done.stdout.startswith('{\n  "status": "ok"')  # --pretty indents; stdout stays JSON


def test_events_plugin_data_values_and_error_text_are_checked(tmp_path: Path):
    package = write_toolbox(tmp_path)
    write_cases(
        package,
        [
            {
                "name": "rings-and-tells",
                "message": "I ring.",
                "llmResponses": [
                    {
                        "toolCalls": [
                            call("ring", {"times": 2}, "a"),
                            call(
                                "emit-event",
                                {"topic": "toolbox.rang", "payload": {"times": 2}},
                                "b",
                            ),
                        ]
                    },
                    {"content": "Rung twice."},
                ],
                "expect": {
                    "runtimeResults": [{"runtimeId": "toolbox", "status": "success"}],
                    "pluginData": [
                        {"namespace": "counters", "key": "rings", "equals": 2},
                        {"namespace": "cards", "key": "bell", "status": "absent"},
                    ],
                    "events": [{"topic": "toolbox.rang", "payload": {"times": 2}, "count": 1}],
                },
            },
            {
                "name": "wrong-expectations",
                "message": "I ring.",
                "llmResponses": [
                    {"toolCalls": [call("ring", {"times": 3}, "a")]},
                    {"content": "No."},
                ],
                "expect": {
                    "runtimeResults": [
                        {"runtimeId": "toolbox", "status": "success", "errorIncludes": "loud"}
                    ],
                    "pluginData": [{"namespace": "counters", "key": "rings"}],
                    "events": [{"topic": "toolbox.rang"}],
                },
            },
            {
                "name": "the-script-runs-out",
                "message": "I ring.",
                "llmResponses": [],
                "expect": {
                    "runtimeResults": [
                        {
                            "runtimeId": "toolbox",
                            "status": "failed",
                            "errorIncludes": "no scripted reply left",
                        }
                    ]
                },
            },
        ],
    )
    code, report, err = run_command(str(package))
    assert code == 1
    first, second, third = report["cases"]
    assert first["status"] == "passed", first["result"].get("failures")
    assert first["result"]["events"][0]["topic"] == "toolbox.rang"
    assert second["status"] == "failed"
    assert second["result"]["failures"] == [
        "runtime toolbox's error '' does not include 'loud'",
        "plugin data toolbox/counters/rings was not saved",
        "no event toolbox.rang was emitted",
    ]
    assert third["status"] == "passed", third["result"].get("failures")
    assert "failed cases: wrong-expectations" in err


def test_a_package_that_does_not_load_fails_every_case_with_the_loaders_errors(tmp_path: Path):
    package = tmp_path / "notebook"
    shutil.copytree(PLUGINS / "notebook", package)
    manifest = package / "PLUGIN.md"
    manifest.write_text(manifest.read_text().replace("finishWith: save-note", "finishWith: 7"))
    code, report, _ = run_command(str(package))
    assert code == 1 and report["status"] == "failed"
    failures = report["cases"][0]["result"]["failures"]
    assert failures and all(
        f.startswith("the package does not load: PLUGIN.md:/runtime/agent/finishWith")
        for f in failures
    )


def test_a_functions_batch_proposals_are_saved_and_a_reserved_namespace_fails_the_case(
    tmp_path: Path,
):
    # The corpus package that writes through plugin.data.batch / plugin.data.delete proposals.
    package = tmp_path / "ledger-batch"
    shutil.copytree(REPO / "tests" / "covel_corpus" / "ledger-batch", package)
    write_cases(
        package,
        [
            {
                "name": "a-batch",
                "runtimeId": "ledger-batch",
                "message": "we set sail",
                "expect": {
                    "runtimeResults": [{"runtimeId": "ledger-batch", "status": "success"}],
                    "pluginData": [
                        {
                            "namespace": "ledger",
                            "key": "latest",
                            "field": "message",
                            "equals": "we set sail",
                        },
                        {"namespace": "tallies", "key": "turns", "equals": 1},
                    ],
                },
            },
            {
                "name": "a-forged-namespace",
                "runtimeId": "ledger-batch",
                "message": "audit",
                "expect": {
                    "runtimeResults": [
                        {
                            "runtimeId": "ledger-batch",
                            "status": "failed",
                            "errorIncludes": "'_runtime_jobs'",
                        }
                    ],
                    "pluginData": [{"namespace": "tallies", "key": "turns", "status": "absent"}],
                },
            },
        ],
    )
    code, report, _ = run_command(str(package))
    assert code == 0, json.dumps(report, indent=2)
    assert [c["status"] for c in report["cases"]] == ["passed", "passed"]


def test_a_functions_character_upsert_is_saved_as_the_sessions_and_checked(tmp_path: Path):
    # The corpus package that upserts characters; a second player character fails its case.
    package = tmp_path / "scene-chronicler"
    shutil.copytree(REPO / "tests" / "covel_corpus" / "scene-chronicler", package)
    write_cases(
        package,
        [
            {
                "name": "mara-enters",
                "runtimeId": "scene-chronicler",
                "message": "Enter Mara, a one-eyed smuggler",
                "expect": {
                    "runtimeResults": [{"runtimeId": "scene-chronicler", "status": "success"}],
                    "pluginData": [
                        {
                            "pluginId": "_session",
                            "namespace": "characters",
                            "key": "mara",
                            "field": "description",
                            "equals": "a one-eyed smuggler",
                        }
                    ],
                },
            },
            {
                "name": "two-heroes",
                "runtimeId": "scene-chronicler",
                "message": "Enter Rook as the hero",
                "expect": {
                    "runtimeResults": [
                        {
                            "runtimeId": "scene-chronicler",
                            "status": "failed",
                            "errorIncludes": "[character-player-taken]",
                        }
                    ],
                    "pluginData": [
                        {
                            "pluginId": "_session",
                            "namespace": "characters",
                            "key": "lead",
                            "status": "absent",
                        }
                    ],
                },
            },
        ],
    )
    code, report, _ = run_command(str(package))
    assert code == 0, json.dumps(report, indent=2)
    assert [c["status"] for c in report["cases"]] == ["passed", "passed"]
