"""The OpenAPI document says what the API answers: a bounded schemathesis fuzz, three personas.

Personas (tests/conftest.py): the anonymous visitor; Alice, a player who owns the world
"harbor", a session of it and that session's job; Bob, staff, who may see and act on all of it.
About half the generated cases use the real ids of those rows, so requests reach the handlers'
200/403/409 paths, not only their 404s.

Each persona runs FUZZ_EXAMPLES positive and as many negative cases per operation (default 6,
about 25 s per persona on a 2-core machine). A bigger run, with its figures printed:

    API_FUZZ_EXAMPLES=60 .venv/bin/python -m pytest -q -s tests/config/test_openapi_fuzz.py
"""

from __future__ import annotations

import os
from pathlib import Path

import openapi_fuzz
import pytest
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client

from approvals.models import ApprovalRequest
from approvals.services import approval_request_sync
from catalogue.manifest.loader import load_package
from catalogue.services import package_content_hash, package_index
from jobs.services import job_enqueue
from sessions.services import session_create
from sources.services import source_plugins_sync
from worlds.models import World

REPO = Path(__file__).resolve().parents[2]
FUZZ_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "6"))

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _index(package_id: str, source: str = "bundled"):
    path = REPO / "plugins" / package_id
    result = load_package(path, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    return package_index(
        result=result,
        source=source,
        content_hash=package_content_hash(path=path),
        host_version="0.1.0",
    )


@pytest.fixture
def rows(alice) -> dict[str, str]:
    """Real rows for every kind of path parameter, and their ids by parameter name."""
    for package_id in ("storyteller", "word-count", "dice", "notebook"):
        _index(package_id)
    # The community weather package asks for HTTP access: an approval request.
    approval_request_sync(package=_index("weather", source="community"))
    world = World.objects.create(
        world_id="harbor",
        name="Harbor Nights",
        description="A rainy port.",
        plugins=["word-count", "dice", "notebook"],
        owner=alice,
    )
    session = session_create(owner=alice, world=world)
    job = job_enqueue(session_id=session.pk, plugin_id="dice", runtime_id="dice/dice")
    source_plugins_sync(dirs=[REPO / "source-plugins"])
    approval = ApprovalRequest.objects.filter(package_key="weather").first()
    assert approval is not None, "the community weather package should ask for approval"
    return {
        "package_id": "dice",
        "world_id": "harbor",
        "session_id": str(session.pk),
        "seat_id": session.seats[0]["id"],
        "job_id": job.job_id,
        "request_id": str(approval.pk),
        "plugin_id": "localfeed",
        "plugin": "dice",
        "runtime": "dice",
        "action": "roll",
    }


def _persona(user) -> tuple[dict[str, str], dict[str, str]]:
    """Cookies and headers of a browser: a CSRF pair (as any page gives, so writes get past the
    CSRF check to the handler), and the session cookie of a logged-in user."""
    csrf = _get_new_csrf_string()
    cookies = {"csrftoken": csrf}
    if user is not None:
        client = Client()
        client.force_login(user)
        cookies["sessionid"] = client.cookies["sessionid"].value
    return cookies, {"X-CSRFToken": csrf}


@pytest.fixture
def app():
    yield openapi_fuzz.wsgi_app()
    openapi_fuzz.restore_signals()


@pytest.mark.parametrize("persona", ["anonymous", "alice", "bob"])
def test_every_answer_matches_the_openapi_document(persona, rows, app, request):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    cookies, headers = _persona(user)
    report = openapi_fuzz.fuzz(
        app=app,
        cookies=cookies,
        headers=headers,
        known=rows,
        examples=FUZZ_EXAMPLES,
        # An event stream waits for new events for ?wait= seconds: the fuzz reads what is there.
        fixed_query={("GET", "/api/sessions/{session_id}/events"): {"wait": 0}},
    )
    print(f"\n{persona}: {report.summary()}")
    # Enough requests ran for the figures to mean something (two modes per operation).
    assert report.requests >= 20 * FUZZ_EXAMPLES, report.summary()
    assert sum(report.figures.values()) == 0, report.summary()


def test_the_fuzz_fails_on_a_wrong_body_and_an_undocumented_status(app, monkeypatch):
    """The check itself can fail: a list item of the wrong shape, a status no one declared."""
    from django.http import JsonResponse

    from catalogue import api as catalogue_api
    from core.errors import ApiError

    def teapot() -> None:
        raise ApiError("not today", code="teapot", status=418)

    # ninja passes an HttpResponse through unchecked: the body reaches the client as it is.
    monkeypatch.setattr(catalogue_api, "tag_counts", lambda: JsonResponse([{"tag": 7}], safe=False))
    monkeypatch.setattr(catalogue_api, "contract_providers", teapot)
    report = openapi_fuzz.fuzz(
        app=app,
        cookies={},
        headers={},
        known={},
        examples=2,
        only={("GET", "/api/tags"), ("GET", "/api/contracts")},
    )
    assert report.requests >= 2
    assert report.figures["schema_violations"] >= 1, report.summary()
    assert report.figures["undocumented_statuses"] >= 1, report.summary()
    assert {d[1] for d in report.distinct} == {"GET /api/tags", "GET /api/contracts"}
