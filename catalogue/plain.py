"""The "in plain words" box of a package page: what it does, what it needs, what it may do and
how to add it to a session, for a player who has never read a manifest. Manifest terms (access
patterns, stages, slots by their ids) stay in the Details tab."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def package_plain_words(*, card: dict[str, Any], usability: Any = None) -> dict[str, Any]:
    """Four short lists of sentences built from the package card (catalogue.selectors)."""
    runtimes = card.get("runtimes") or []
    agents = [r for r in runtimes if r.get("kind") == "agent"]
    does = [card.get("description") or _("Its author wrote no description.")]
    if card.get("commands"):
        names = [f"/{c['name']}" for c in card["commands"]]
        does.append(
            ngettext(
                "Gives you the command %(names)s.", "Gives you the commands %(names)s.", len(names)
            )
            % {"names": _join(names)}
        )
    if card.get("settings"):
        count = len(card["settings"])
        does.append(
            ngettext(
                "Has %(count)d setting you can change per session.",
                "Has %(count)d settings you can change per session.",
                count,
            )
            % {"count": count}
        )

    needs: list[str] = []
    slots = sorted({r["modelSlot"] for r in agents if r.get("modelSlot")})
    if agents:
        needs.append(
            (
                _(
                    "A language model, which staff connect to the hub (model slot %(slots)s); "
                    "without one this part stays idle and the story goes on."
                )
                % {"slots": _join(slots)}
            )
            if slots
            else _(
                "A language model, which staff connect to the hub; without one this part "
                "stays idle and the story goes on."
            )
        )
    for requirement in card.get("requiresProviders") or []:
        providers = requirement.get("providers") or []
        if providers:
            needs.append(
                _("Another plugin that does its part: %(names)s.") % {"names": _join(providers)}
            )
        else:
            needs.append(_("Another plugin that no installed package provides yet."))
    if not needs:
        needs.append(_("Nothing else: it works on its own."))

    may = [line for line in (card.get("permissions") or {}).get("summary") or []]
    if not card.get("entry") and not agents and not may[1:]:
        may.append(_("It runs no code of its own and calls no model."))

    if card.get("state") == "error":
        add = [_("It cannot be added: it failed validation (see Details).")]
    elif usability is not None and not usability.usable:
        add = [_("Not yet: it %(reason)s.") % {"reason": usability.reason.split(" ", 2)[-1]}]
    elif card.get("kind") == "core":
        add = [
            _("It is on in every new session; untick it on the New session form to leave it out.")
        ]
    else:
        add = [
            _("Open Sessions → New session, pick a world and tick it under Plugins."),
            _("Or ask the world's owner to add %(id)s to the world's plugins.")
            % {"id": card.get("id")},
        ]
    return {"does": does, "needs": needs, "may": may, "add": add}
