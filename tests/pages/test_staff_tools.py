"""Staff are told what waits and can read what they approve: a pending count in the header,
mail to staff when a request arrives (when mail is configured), the requested server code and
its diff against the last approved version on the approval page, a confirmation on every
decision button, and the request's real state on the package pages.

Personas (tests/conftest.py): Alice plays; Bob is staff; the anonymous visitor browses.
"""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client

from approvals.selectors import approval_current
from approvals.services import approval_decide, approval_request_sync
from approvals.store import approved_copy

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "export default function register(covel) {\n  // version one\n}\n"
NEW = "export default function register(covel) {\n  // <img src=x onerror=alert(1)>\n}\n"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def lamp(tmp_path, settings):
    """A community package "lamp" with server code, indexed as a sync would."""
    import importlib.util
    from pathlib import Path

    # The approvals tests' package writer (a sync without the catalogue's loader).
    path = Path(__file__).resolve().parents[1] / "approvals" / "conftest.py"
    spec = importlib.util.spec_from_file_location("approvals_test_support", path)
    support = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(support)
    PackageFactory = support.PackageFactory

    settings.VAR_DIR = tmp_path / "var"
    factory = PackageFactory(tmp_path / "plugins")

    def write(version: str, files: dict[str, str]):
        package = factory.write("lamp", manifest={"version": version}, files=files)
        approval_request_sync(package=package)
        return package

    return write


def test_the_header_counts_pending_requests_for_staff_only(lamp, alice, bob):
    lamp("1.0.0", {"server/index.js": OLD})
    staff_page = logged_in(bob).get("/sessions/").content.decode()
    assert 'class="pending-count"' in staff_page and ">1<" in staff_page
    assert "/approvals/?state=pending" in staff_page
    assert "pending-count" not in logged_in(alice).get("/sessions/").content.decode()
    approval_decide(request_id=approval_current(package_key="lamp").pk, decision="deny", actor=bob)
    assert "pending-count" not in logged_in(bob).get("/sessions/").content.decode()


def test_staff_are_mailed_when_a_request_waits(lamp, bob, alice, settings):
    bob.email = "bob@hub.example"
    bob.save()
    alice.email = "alice@hub.example"
    alice.save()
    mail.outbox.clear()
    lamp("1.0.0", {"server/index.js": OLD})
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["bob@hub.example"]  # staff only
    assert "lamp 1.0.0" in message.subject
    assert f"/approvals/{approval_current(package_key='lamp').pk}/" in message.body
    # A sync that changes nothing writes no request and mails nobody.
    lamp("1.0.0", {"server/index.js": OLD})
    assert len(mail.outbox) == 1


def test_no_mail_without_a_mail_server(lamp, bob, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = ""
    bob.email = "bob@hub.example"
    bob.save()
    lamp("1.0.0", {"server/index.js": OLD})  # would fail loudly if it tried to connect
    assert approval_current(package_key="lamp").state == "pending"


def test_the_approval_page_shows_the_code_and_its_diff(lamp, bob):
    first = lamp("1.0.0", {"server/index.js": OLD})
    request = approval_current(package_key="lamp")
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    approved_copy(
        source_dir=first.source_dir, code=request.permissions["code"]
    )  # as a load pins it
    lamp(
        "1.1.0",
        {
            "server/index.js": NEW,
            "server/extra.js": "export const x = 1;\n",
            "server/a.bin": "\0\1",
        },
    )
    newer = approval_current(package_key="lamp")
    assert newer.pk != request.pk and newer.state == "pending"

    page = logged_in(bob).get(f"/approvals/{newer.pk}/").content.decode()
    assert 'data-path="server/index.js"' in page and 'data-path="server/extra.js"' in page
    assert '<span class="diff-removed">-  // version one</span>' in page
    # Plugin text is escaped, in the diff and in the file view.
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page
    assert "export const x = 1;" in page
    # A binary file is named and hashed, never dumped as text.
    binary = page[page.index('data-path="server/a.bin"') :]
    assert "A binary file" in binary[: binary.index("</details>")]


def test_decisions_ask_first_and_decided_requests_say_so(lamp, bob):
    lamp("1.0.0", {"server/index.js": OLD})
    request = approval_current(package_key="lamp")
    page = logged_in(bob).get(f"/approvals/{request.pk}/").content.decode()
    assert page.count("data-confirm=") == 2  # Approve and Deny
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    page = logged_in(bob).get(f"/approvals/{request.pk}/").content.decode()
    assert 'value="revoke"' in page and "data-confirm=" in page
    assert "needs approval" not in page
    detail = logged_in(bob).get("/packages/lamp/").content.decode()
    listing = logged_in(bob).get("/").content.decode()
    assert 'data-package="lamp"' in listing
    for html in (detail, listing):
        assert "needs approval" not in html, html[html.find("needs approval") - 300 :][:400]
        assert "approved" in html
