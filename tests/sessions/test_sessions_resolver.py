"""Contract resolution: every outcome code, the fixed point, and determinism."""

from __future__ import annotations

import itertools

from catalogue.manifest.types import Manifest
from sessions.resolver import Resolution, resolve

HOST = "0.1.0"


def anyone(_m: Manifest) -> tuple[bool, str | None]:
    return True, None


def run(installed: list[Manifest], requested: list[str], **kwargs: object) -> Resolution:
    options: dict[str, object] = {"usable": anyone, "host_version": HOST}
    options.update(kwargs)
    return resolve(requested=requested, installed={m.id: m for m in installed}, **options)  # type: ignore[arg-type]


def code(resolution: Resolution, package: str) -> str | None:
    verdict = resolution.verdict(package)
    return verdict.code if verdict else None


def test_it_adds_core_packages_and_fills_requires_with_the_default(pkg):
    storyteller = pkg(
        "storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]
    )
    notes = pkg("notes", requires=["story@1"])
    result = run([storyteller, notes], ["notes"])
    assert result.active == ("notes", "storyteller")
    assert code(result, "storyteller") == "core"
    assert code(result, "notes") == "requested"
    assert result.providers["story@1"] == ("storyteller",)


def test_it_fills_a_requirement_with_the_single_non_default_provider(pkg):
    default = pkg("plain", provides=[{"contract": "map@1", "default": True}])
    fancy = pkg("fancy", provides=["map@1"])
    user = pkg("user", requires=["map@1"])
    result = run([default, fancy, user], ["user"])
    assert result.active == ("fancy", "user")
    verdict = result.verdict("fancy")
    assert verdict is not None and verdict.code == "dependency" and verdict.other == "user"
    # The default was never added, so it has no outcome at all.
    assert "plain" not in result.outcomes


def test_unknown_plugin(pkg):
    result = run([pkg("a")], ["a", "ghost"])
    assert result.active == ("a",)
    assert code(result, "ghost") == "unknown-plugin"
    assert "ghost" in result.verdict("ghost").message  # type: ignore[union-attr]


def test_excluded_core_package_stays_out_even_as_a_provider(pkg):
    storyteller = pkg(
        "storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]
    )
    notes = pkg("notes", requires=["story@1"])
    result = run([storyteller, notes], ["notes"], excluded={"storyteller"})
    assert result.active == ()
    assert code(result, "storyteller") == "excluded"
    assert code(result, "notes") == "missing-provider"
    assert "storyteller: excluded" in result.verdict("notes").message  # type: ignore[union-attr]


def test_approval_required(pkg):
    community = pkg("community")
    result = run(
        [community, pkg("a")],
        ["community", "a"],
        usable=lambda m: (m.id != "community", "waiting for staff approval"),
    )
    assert result.active == ("a",)
    assert code(result, "community") == "approval-required"
    assert "waiting for staff approval" in result.verdict("community").message  # type: ignore[union-attr]


def test_host_range(pkg):
    # Indexed by a newer hub, then resolved on this one (0.1.0).
    future = pkg("future", covel=">=9.0.0", host_version="9.1.0")
    result = run([future], ["future"])
    assert result.active == ()
    assert code(result, "future") == "host-range"
    assert result.verdict("future").message == "future needs Covel >=9.0.0; this host runs 0.1.0"  # type: ignore[union-attr]


def test_missing_provider_drops_the_requirer_and_prunes_what_it_pulled_in(pkg):
    helper = pkg("helper", provides=["help@1"], requires=["nothing@1"])
    user = pkg("user", requires=["help@1"])
    result = run([helper, user], ["user"])
    assert result.active == ()
    assert code(result, "helper") == "missing-provider"
    assert code(result, "user") == "missing-provider"
    assert "helper: missing-provider" in result.verdict("user").message  # type: ignore[union-attr]


def test_an_unapproved_only_provider_is_a_missing_provider_and_says_why(pkg):
    provider = pkg("provider", provides=["x@1"])
    user = pkg("user", requires=["x@1"])
    result = run([provider, user], ["user"], usable=lambda m: (m.id != "provider", None))
    assert result.active == ()
    assert code(result, "provider") == "approval-required"
    assert code(result, "user") == "missing-provider"
    assert "provider: approval-required" in result.verdict("user").message  # type: ignore[union-attr]


def test_two_non_default_providers_without_a_default_are_ambiguous(pkg):
    one = pkg("one", provides=["x@1"])
    two = pkg("two", provides=["x@1"])
    user = pkg("user", requires=["x@1"])
    result = run([one, two, user], ["user"])
    assert result.active == ()
    verdict = result.verdict("user")
    assert verdict is not None and verdict.code == "ambiguous-provider"
    assert "one, two" in verdict.message
    # Requesting one of them settles it.
    assert run([one, two, user], ["user", "two"]).active == ("two", "user")


def test_two_non_default_providers_fall_back_to_the_default(pkg):
    one = pkg("one", provides=["x@1"])
    two = pkg("two", provides=["x@1"])
    base = pkg("base", provides=[{"contract": "x@1", "default": True}])
    user = pkg("user", requires=["x@1"])
    assert run([one, two, base, user], ["user"]).active == ("base", "user")


def test_a_default_provider_steps_aside_for_a_requested_provider(pkg):
    storyteller = pkg(
        "storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]
    )
    bard = pkg("bard", provides=["story@1"])
    notes = pkg("notes", requires=["story@1"])
    # The session form pre-selects core packages, so the storyteller is requested too.
    result = run([storyteller, bard, notes], ["storyteller", "notes", "bard"])
    assert result.active == ("bard", "notes")
    verdict = result.verdict("storyteller")
    assert verdict is not None and verdict.code == "default-replaced" and verdict.other == "bard"
    assert [o.code for o in result.outcomes["storyteller"]] == ["default-replaced"]


def test_a_default_comes_back_when_its_replacement_is_dropped(pkg):
    storyteller = pkg(
        "storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]
    )
    bard = pkg("bard", provides=["story@1"], requires=["lute@1"])
    notes = pkg("notes", requires=["story@1"])
    result = run([storyteller, bard, notes], ["notes", "bard"])
    assert result.active == ("notes", "storyteller")
    assert code(result, "bard") == "missing-provider"
    assert code(result, "storyteller") == "core"


def test_explicit_requests_win_conflicts_over_dependencies(pkg):
    grim = pkg("grim", provides=["tone@1"])
    cheer = pkg("cheer", provides=["mood@1"], conflicts=["tone@1"])
    party = pkg("party", requires=["mood@1"])
    result = run([grim, cheer, party], ["grim", "party"])
    # cheer came in as party's dependency and conflicts with the explicitly requested grim.
    assert code(result, "cheer") == "conflict"
    assert result.verdict("cheer").other == "grim"  # type: ignore[union-attr]
    assert "requested explicitly" in result.verdict("cheer").message  # type: ignore[union-attr]
    # party lost its provider, so it goes too; grim stays.
    assert code(result, "party") == "missing-provider"
    assert result.active == ("grim",)


def test_between_two_requests_the_earlier_one_wins(pkg):
    grim = pkg("grim", provides=["tone@1"])
    cheer = pkg("cheer", conflicts=["tone@1"])
    assert run([grim, cheer], ["cheer", "grim"]).active == ("cheer",)
    assert run([grim, cheer], ["grim", "cheer"]).active == ("grim",)


def test_a_conflict_is_about_other_providers_only(pkg):
    # Declaring a conflict over a contract one provides itself keeps out only the rivals.
    solo = pkg("solo", provides=["stage@1"], conflicts=["stage@1"])
    result = run([solo], ["solo"])
    assert result.active == ("solo",)


def test_every_outcome_has_a_sentence(pkg):
    storyteller = pkg(
        "storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]
    )
    bard = pkg("bard", provides=["story@1"])
    result = run([storyteller, bard], ["bard", "ghost"])
    for history in result.outcomes.values():
        for outcome in history:
            assert outcome.message.endswith(outcome.message.rstrip()) and len(outcome.message) > 10
            assert outcome.package in outcome.message


def test_the_result_does_not_depend_on_the_order_of_installed_packages(pkg):
    packages = [
        pkg("storyteller", kind="core", provides=[{"contract": "story@1", "default": True}]),
        pkg("bard", provides=["story@1"]),
        pkg("notes", requires=["story@1"]),
        pkg("cheer", provides=["mood@1"], conflicts=["tone@1"]),
        pkg("grim", provides=["tone@1"]),
        pkg("party", requires=["mood@1"]),
    ]
    seen = set()
    for permutation in itertools.islice(itertools.permutations(packages), 0, 720, 37):
        result = run(list(permutation), ["notes", "bard", "grim", "party"])
        seen.add(
            (result.active, tuple(sorted((p, o[-1].code) for p, o in result.outcomes.items())))
        )
    assert len(seen) == 1


def test_bundled_packages_resolve(bundled):
    result = resolve(
        requested=["notebook", "rapport", "satchel", "chronicle"],
        installed=bundled,
        usable=anyone,
        host_version=HOST,
    )
    # The storyteller is core and the default narrative-engine@2 that notebook requires.
    assert "storyteller" in result.active
    assert result.providers["narrative-engine@2"] == ("storyteller",)
    assert set(result.active) == {"storyteller", "notebook", "rapport", "satchel", "chronicle"}


def test_a_missing_contract_names_the_installed_provider_of_another_major(pkg):
    # A real Covel package requires narrative-engine@1; the hub bundles narrative-engine@2.
    storyteller = pkg("storyteller", provides=[{"contract": "narrative-engine@2", "default": True}])
    tracker = pkg("tracker", requires=["narrative-engine@1"])
    result = run([storyteller, tracker], ["tracker"])
    assert code(result, "tracker") == "missing-provider"
    message = result.verdict("tracker").message  # type: ignore[union-attr]
    assert "requires narrative-engine@1" in message
    assert "another major is installed: narrative-engine@2 from storyteller" in message


def test_a_missing_contract_with_no_other_major_says_only_what_is_missing(pkg):
    storyteller = pkg("storyteller", provides=["narrative-engine@2"])
    mapper = pkg("mapper", requires=["world-ir-provider@1"])
    result = run([storyteller, mapper], ["mapper"])
    message = result.verdict("mapper").message  # type: ignore[union-attr]
    assert "world-ir-provider@1" in message and "another major" not in message
