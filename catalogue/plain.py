"""The "in plain words" box of a package page: what it does, what it needs, what it may do and
how to add it to a session, for a player who has never read a manifest. Manifest terms (access
patterns, stages, slots by their ids) stay in the Details tab."""

from __future__ import annotations

from typing import Any


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def package_plain_words(*, card: dict[str, Any], usability: Any = None) -> dict[str, Any]:
    """Four short lists of sentences built from the package card (catalogue.selectors)."""
    runtimes = card.get("runtimes") or []
    agents = [r for r in runtimes if r.get("kind") == "agent"]
    does = [card.get("description") or "Its author wrote no description."]
    if card.get("commands"):
        names = [f"/{c['name']}" for c in card["commands"]]
        does.append(f"Gives you the command{'s' if len(names) > 1 else ''} {_join(names)}.")
    if card.get("settings"):
        count = len(card["settings"])
        does.append(f"Has {count} setting{'s' if count > 1 else ''} you can change per session.")

    needs: list[str] = []
    slots = sorted({r["modelSlot"] for r in agents if r.get("modelSlot")})
    if agents:
        needs.append(
            "A language model, which staff connect to the hub"
            + (f" (model slot {_join(slots)})" if slots else "")
            + "; without one this part stays idle and the story goes on."
        )
    for requirement in card.get("requiresProviders") or []:
        providers = requirement.get("providers") or []
        if providers:
            needs.append(f"Another plugin that does its part: {_join(providers)}.")
        else:
            needs.append("Another plugin that no installed package provides yet.")
    if not needs:
        needs.append("Nothing else: it works on its own.")

    may = [line for line in (card.get("permissions") or {}).get("summary") or []]
    if not card.get("entry") and not agents and not may[1:]:
        may.append("It runs no code of its own and calls no model.")

    if card.get("state") == "error":
        add = ["It cannot be added: it failed validation (see Details)."]
    elif usability is not None and not usability.usable:
        add = [f"Not yet: it {usability.reason.split(' ', 2)[-1]}."]
    elif card.get("kind") == "core":
        add = ["It is on in every new session; untick it on the New session form to leave it out."]
    else:
        add = [
            "Open Sessions → New session, pick a world and tick it under Plugins.",
            f"Or ask the world's owner to add {card.get('id')} to the world's plugins.",
        ]
    return {"does": does, "needs": needs, "may": may, "add": add}
