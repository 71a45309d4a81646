"""GET /healthz answers 200 when the database, broker, Node and migrations are fine, and 503
naming the failed check otherwise; it shows no server path to the anonymous visitor."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

import config.health as health


@pytest.fixture(autouse=True)
def fresh_node_verdict():
    health._node_cache.clear()
    yield
    health._node_cache.clear()


def test_it_answers_200_with_every_check_ok(db):
    answer = Client().get("/healthz")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "migrations", "broker", "node"}
    assert all(c["ok"] for c in body["checks"].values())
    assert "no-cache" in answer["Cache-Control"]


def test_a_pending_migration_answers_503(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE id = (SELECT MAX(id) FROM django_migrations)"
        )
    answer = Client().get("/healthz")
    assert answer.status_code == 503
    check = answer.json()["checks"]["migrations"]
    assert check["ok"] is False and "manage.py migrate" in check["problem"]


def test_a_missing_broker_folder_answers_503_without_naming_the_path(db, settings, tmp_path):
    gone = tmp_path / "no-such-broker"
    settings.REDIS_URL = ""
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(gone)}
    answer = Client().get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["broker"]["ok"] is False
    assert str(tmp_path) not in answer.content.decode()


def test_a_node_that_cannot_start_answers_503(db, monkeypatch, tmp_path):
    import pluginhost.host

    monkeypatch.setattr(pluginhost.host, "node_binary", lambda: str(tmp_path / "no-node"))
    answer = Client().get("/healthz")
    assert answer.status_code == 503
    node = answer.json()["checks"]["node"]
    assert node["ok"] is False and str(tmp_path) not in node["problem"]
