"""`loaded` must mean loaded: after sync the catalogue tries the code (real Node), or for
unapproved community code only parses it, and staff cannot approve code that does not load."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.selectors import approval_current
from approvals.services import ApprovalCodeError, approval_decide
from catalogue.models import Package

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
description: {description}
entry: ./server/index.js
---
Notes.
"""


def write(root: Path, package_id: str, entry: str, files: dict[str, str] | None = None) -> Path:
    folder = root / package_id
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(PLUGIN_MD.format(description=f"The {package_id} package."))
    (folder / "server" / "index.js").write_text(entry)
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


GOOD = (
    'import { helper } from "./helper.js";\nexport default function register(covel) { helper(); }\n'
)
HELPER = "export function helper() { return 1; }\n"


@pytest.fixture
def folders(tmp_path, settings):
    bundled, user = tmp_path / "bundled", tmp_path / "user"
    bundled.mkdir()
    user.mkdir()
    settings.COVEL_BUNDLED_PLUGINS_DIR = bundled
    settings.COVEL_USER_PLUGINS_DIR = user
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = []
    return bundled, user


def sync() -> None:
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())


def state(package_id: str) -> tuple[str, str]:
    row = Package.objects.get(package_id=package_id)
    return row.code_state, row.code_error


def test_bundled_code_is_imported_and_a_broken_helper_is_a_code_error(folders):
    bundled, _ = folders
    write(bundled, "fine", GOOD, {"server/helper.js": HELPER})
    write(
        bundled,
        "broken",
        GOOD,
        {"server/helper.js": "export function helper() {\n  return ;;\n  }}\n"},
    )
    write(bundled, "throws", 'throw new Error("boom at import");\nexport default () => {};\n')
    sync()
    assert state("fine") == ("loaded", "")
    code, message = state("broken")
    assert code == "code-error"
    assert "server/helper.js" in message and "[module_syntax_error]" in message
    code, message = state("throws")
    assert code == "code-error" and "boom at import" in message  # it really ran


def test_unapproved_community_code_is_parsed_never_run(folders):
    _, user = folders
    # It would throw if it ran; the static check passes it, so the throw proves it did not run.
    write(
        user,
        "careful",
        'import { helper } from "./helper.js";\nthrow new Error("ran");\nexport default () => helper();\n',
        {"server/helper.js": HELPER},
    )
    write(user, "missing", 'import { nope } from "./nope.js";\nexport default () => nope();\n')
    write(user, "escapes", 'import fs from "node:fs";\nexport default () => fs;\n')
    sync()
    assert state("careful") == ("needs-approval", "")
    code, message = state("missing")
    assert code == "code-error" and "./nope.js" in message and "[module_not_found]" in message
    code, message = state("escapes")
    assert code == "code-error" and "node:fs" in message and "[plugin_import_refused]" in message


def test_catalogue_page_and_api_show_the_real_state(folders):
    bundled, user = folders
    write(bundled, "fine", GOOD, {"server/helper.js": HELPER})
    write(user, "missing", 'import { nope } from "./nope.js";\nexport default () => nope();\n')
    write(user, "careful", GOOD, {"server/helper.js": HELPER})
    sync()
    client = Client()
    items = {i["id"]: i for i in client.get("/api/packages").json()["items"]}
    assert items["fine"]["codeState"] == "loaded"
    assert items["careful"]["codeState"] == "needs-approval"
    assert items["missing"]["codeState"] == "code-error"
    assert "./nope.js" in items["missing"]["codeError"]
    assert Package.objects.get(package_id="missing").state == "loaded"  # the manifest is valid
    page = client.get("/packages/missing/").content.decode()
    assert 'data-code-state="code-error"' in page and "./nope.js" in page
    page = client.get("/packages/careful/").content.decode()
    assert 'data-code-state="needs-approval"' in page
    listing = client.get("/").content.decode()
    assert "code error" in listing


def test_staff_cannot_approve_code_that_does_not_load_and_approved_code_is_imported(folders, bob):
    _, user = folders
    write(user, "missing", 'import { nope } from "./nope.js";\nexport default () => nope();\n')
    write(user, "careful", GOOD, {"server/helper.js": HELPER})
    sync()
    broken = approval_current(package_key="missing")
    with pytest.raises(ApprovalCodeError) as raised:
        approval_decide(request_id=broken.pk, decision="allow", actor=bob)
    assert "its code does not load" in raised.value.message and "./nope.js" in raised.value.message
    broken.refresh_from_db()
    assert broken.state == "pending"

    good = approval_current(package_key="careful")
    approval_decide(request_id=good.pk, decision="allow", actor=bob)
    assert state("careful") == ("loaded", "")  # imported for real once approved
    approval_decide(request_id=good.pk, decision="revoke", actor=bob)
    assert state("careful") == ("needs-approval", "")


def test_the_approval_api_answers_409_for_code_that_does_not_load(folders, bob, client):
    _, user = folders
    write(user, "missing", 'import { nope } from "./nope.js";\nexport default () => nope();\n')
    sync()
    request = approval_current(package_key="missing")
    client.force_login(bob)
    answer = client.post(
        f"/api/approvals/{request.pk}/decision",
        {"decision": "allow"},
        content_type="application/json",
    )
    assert answer.status_code == 409, answer.content
    assert answer.json()["code"] == "approval_code_error"
    listed = client.get("/api/approvals").json()["items"]
    assert "./nope.js" in listed[0]["code_error"]
    assert "./nope.js" in client.get(f"/api/approvals/{request.pk}").json()["code_error"]


def test_the_approval_page_shows_the_code_error_instead_of_the_approve_button(folders, bob, client):
    _, user = folders
    write(user, "missing", 'import { nope } from "./nope.js";\nexport default () => nope();\n')
    write(user, "careful", GOOD, {"server/helper.js": HELPER})
    sync()
    client.force_login(bob)
    broken = approval_current(package_key="missing")
    page = client.get(f"/approvals/{broken.pk}/").content.decode()
    assert "Cannot be approved: its code does not load." in page and "./nope.js" in page
    assert 'value="allow"' not in page and 'value="deny"' in page
    good = approval_current(package_key="careful")
    page = client.get(f"/approvals/{good.pk}/").content.decode()
    assert 'value="allow"' in page and "Cannot be approved" not in page
