"""The jobs timeline reads right: a qualified runtime id does not print its plugin twice, the
axis labels stay inside the picture, and the legend explains the failure colours.

Personas: Bob is staff (the dashboard is staff-only)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from jobs.selectors import job_timeline

pytestmark = pytest.mark.django_db


def test_labels_axis_and_legend(bob, make_job):
    make_job("noop", runtime_id="notebook/summarise")
    make_job("noop", runtime_id="tally")
    client = Client()
    client.force_login(bob)
    html = client.get("/jobs/").content.decode()
    labels = re.findall(r'<text x="4" y="13" class="lane-label">([^<]*)</text>', html)
    assert any(label.startswith("notebook/summarise #") for label in labels), labels
    assert any(label.startswith("notebook/tally #") for label in labels), labels
    assert not any("notebook/notebook" in label for label in labels)
    assert "run that failed, timed out or was orphaned" in html
    assert 'class="swatch bar-failed"' in html and 'class="swatch bar-cancelled"' in html


def test_the_last_tick_ends_inside_the_picture(make_job):
    from jobs.models import RuntimeJob

    make_job("noop")
    timeline = job_timeline(jobs=list(RuntimeJob.objects.all()), waits=[])
    first, *_, last = timeline.ticks
    assert first[2] == "start" and last[2] == "end"
    assert last[0] <= timeline.width
