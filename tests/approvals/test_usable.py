"""package_is_usable: what the resolver and the runtimes ask before using a package."""

from __future__ import annotations

import pytest

from approvals.selectors import (
    approval_current,
    package_is_usable,
    package_unusable_reason,
    package_usability,
)
from approvals.services import approval_decide
from catalogue.models import Package

pytestmark = pytest.mark.django_db


def test_bundled_packages_are_always_usable(packages):
    packages.write("dice", files={"server/index.js": "x"}, trust="bundled")
    assert package_is_usable(package_id="dice")
    assert package_usability(package_id="dice").state == "bundled"


def test_usability_flips_with_each_decision(weather, bob):
    request = approval_current(package_key="weather")
    assert not package_is_usable(package_id="weather")
    assert "waits for a staff member" in package_unusable_reason(package_id="weather")

    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    assert package_is_usable(package_id="weather")
    assert package_is_usable(package_id="weather", version="1.0.0")
    assert package_unusable_reason(package_id="weather") is None

    approval_decide(request_id=request.pk, decision="revoke", actor=bob)
    assert not package_is_usable(package_id="weather")
    assert "revoked" in package_unusable_reason(package_id="weather")

    approval_decide(request_id=request.pk, decision="allow", actor=bob, note="fixed upstream")
    assert package_is_usable(package_id="weather")


def test_a_denied_package_is_not_usable(weather, bob):
    request = approval_current(package_key="weather")
    approval_decide(request_id=request.pk, decision="deny", actor=bob)
    assert package_usability(package_id="weather").state == "denied"
    assert not package_is_usable(package_id="weather")


def test_a_package_changed_on_disk_but_not_yet_synced_is_not_usable(weather, bob):
    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    Package.objects.filter(package_id="weather").update(content_hash="f" * 64)
    assert package_usability(package_id="weather").state == "unreviewed"


def test_unknown_wrong_version_and_broken_packages_are_not_usable(weather, bob):
    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    assert not package_is_usable(package_id="nope")
    assert not package_is_usable(package_id="weather", version="9.9.9")
    Package.objects.filter(package_id="weather").update(state=Package.State.ERROR)
    assert not package_is_usable(package_id="weather")


def test_a_community_package_never_synced_through_approvals_is_judged_from_its_files(packages):
    packages.write("plain")
    packages.write("coder", files={"server/index.js": "x"})
    assert package_is_usable(package_id="plain")
    assert not package_is_usable(package_id="coder")


def test_the_bulk_variant_agrees_and_costs_two_queries(
    packages, synced, weather, bob, django_assert_num_queries
):
    from approvals.selectors import packages_usability

    packages.write("dice", files={"server/index.js": "x"}, trust="bundled")
    synced("plain")
    synced("maps", manifest={"permissions": {"http": [{"origin": "https://tiles.example"}]}})
    approval_decide(request_id=approval_current(package_key="maps").pk, decision="allow", actor=bob)
    ids = ["weather", "dice", "plain", "maps", "ghost"]
    with django_assert_num_queries(2):
        result = packages_usability(package_ids=ids)
    assert {pid: u.usable for pid, u in result.items()} == {
        "weather": False,
        "dice": True,
        "plain": True,
        "maps": True,
        "ghost": False,
    }
    assert all(result[pid] == package_usability(package_id=pid) for pid in ids)
