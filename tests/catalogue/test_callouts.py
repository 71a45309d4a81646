"""The calls up a floor (catalogue/callouts.py, jobs/runners.py) are registered at start-up by
the apps that answer them, and a call nobody answers fails loudly, naming who should have."""

from __future__ import annotations

import pytest

from catalogue import callouts
from catalogue.callouts import Callout, CalloutMissing


def test_every_slot_is_registered_by_its_app_at_start_up():
    from approvals.selectors import approval_seen_hashes, packages_usability
    from approvals.services import approval_request_sync, approval_requests_sync
    from installs.selectors import available_entries, available_entry, package_provenance
    from pluginhost.codecheck import package_code_checks
    from sources.manifest.loader import load_source_plugin

    assert callouts.approval_request_sync.get() is approval_request_sync
    assert callouts.approval_requests_sync.get() is approval_requests_sync
    assert callouts.approval_seen_hashes.get() is approval_seen_hashes
    assert callouts.packages_usability.get() is packages_usability
    assert callouts.package_code_checks.get() is package_code_checks
    assert callouts.source_plugin_loader.get() is load_source_plugin
    assert callouts.package_provenance.get() is package_provenance
    assert callouts.available_entries.get() is available_entries
    assert callouts.available_entry.get() is available_entry
    assert len(callouts.ALL) == 9


def test_the_job_runner_and_session_check_are_registered_by_sessions():
    from jobs.runners import resolve_runner, session_check
    from sessions.background import run_detached
    from sessions.job_checks import job_session_check

    assert resolve_runner("runtime") is run_detached
    assert session_check() is job_session_check


def test_an_unregistered_slot_names_itself_and_the_app_that_fills_it():
    slot: Callout[object] = Callout("example_slot", "example (example/apps.py)")
    with pytest.raises(CalloutMissing) as refused:
        slot.get()
    assert "catalogue.callouts.example_slot is not registered" in str(refused.value)
    assert "example (example/apps.py)" in str(refused.value)


@pytest.fixture
def usability_unregistered():
    saved = callouts.packages_usability.get()
    callouts.packages_usability.register(None)  # type: ignore[arg-type]
    yield
    callouts.packages_usability.register(saved)


@pytest.mark.django_db
def test_a_catalogue_page_without_the_approvals_answer_fails_instead_of_guessing(
    usability_unregistered,
):
    from catalogue.views import _usability

    # Before, a missing dotted path made every package look usable ({}): now it says so.
    with pytest.raises(CalloutMissing, match="packages_usability"):
        _usability(["storyteller"])


def test_an_unknown_job_kind_is_refused_with_the_known_ones():
    from jobs.errors import RunnerNotFound
    from jobs.runners import resolve_runner

    with pytest.raises(RunnerNotFound, match=r"kind 'nowhere'.*runtime"):
        resolve_runner("nowhere")
