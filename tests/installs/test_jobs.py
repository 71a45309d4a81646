"""Install jobs: the row is the truth; each step and its progress is recorded, a failure names
the step and why, and a second delivery of the same message does nothing."""

from __future__ import annotations

import json

import pytest
from install_archives import plugin_files

from installs.jobs import job_create, job_run
from installs.models import InstallJob

pytestmark = pytest.mark.django_db


def test_a_job_installs_from_a_preview_token_and_records_its_steps(
    hub_dirs, git_server, client, bob, django_capture_on_commit_callbacks
):
    git_server.repo("pkgs")
    git_server.commit("pkgs", plugin_files("lantern"))
    client.force_login(bob)
    preview = client.post(
        "/installs/add/", {"what": "link", "url": f"{git_server.url}/pkgs.git"}
    ).content.decode()
    token = preview.split('name="token" value="', 1)[1].split('"', 1)[0]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/installs/add/confirm", {"token": token, "accept_risk": "yes"})
    assert response.status_code == 302 and len(callbacks) == 1  # the task is sent after the commit
    job = InstallJob.objects.get()
    assert job.state == "queued" and response["Location"] == f"/installs/jobs/{job.pk}/"
    steps = []
    from installs import jobs as jobs_module

    original = jobs_module._progress

    def spy(job_id):  # noqa: ANN001, ANN202
        report = original(job_id)
        return lambda step, percent: (steps.append(step), report(step, percent))

    jobs_module._progress = spy
    try:
        done = job_run(job_id=job.pk)
    finally:
        jobs_module._progress = original
    assert done.state == "done" and done.progress == 100 and done.result["id"] == "lantern"
    assert steps[:1] == ["fetch"] and "validate" in steps and "write" in steps and "index" in steps
    assert job_run(job_id=job.pk) is None  # a second delivery finds it claimed
    page = client.get(f"/installs/jobs/{job.pk}/").content.decode()
    assert 'data-state="done"' in page and "lantern" in page


def test_a_failed_job_names_the_step_and_leaves_nothing(hub_dirs, git_server, bob):
    git_server.repo("pkgs")
    git_server.commit("pkgs", plugin_files("lantern"))
    from installs.remote import github_preview

    item = github_preview(url=f"{git_server.url}/pkgs.git")["items"][0]
    git_server.commit("pkgs", {"PLUGIN.md": plugin_files("lantern", version="9.0.0")["PLUGIN.md"]})
    # The preview pinned its commit: the install still gets exactly it ...
    job = job_create(kind="install", params={"token": item["token"]}, actor=bob, send=False)
    assert job_run(job_id=job.pk).state == "done"
    # ... and a token for a package that is there already fails at a named step.
    job = job_create(kind="install", params={"token": item["token"]}, actor=bob, send=False)
    failed = job_run(job_id=job.pk)
    assert failed.state == "failed" and failed.error.startswith("validate: ")
    assert "already installed" in failed.error and failed.result["status"] == 409
    assert json.dumps(failed.result)
