from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache

from agents.gateway import Endpoint, ModelError
from agents.models import ModelSlot
from core.memo import per_scope

log = logging.getLogger("covel.agents")

# Where every process shares the cache (Redis), the enabled slots are kept there: a turn then
# reads no slot row (docs/sessions.md, the statement budget). A save or delete of a slot clears
# it (agents/apps.py); a bulk update past the ORM's signals shows within this many seconds.
SLOTS_CACHE_KEY = "covel:agents:enabled-slots"
SLOTS_CACHE_SECONDS = 60


def _cache_is_shared() -> bool:
    return settings.CACHES["default"]["BACKEND"].endswith("RedisCache")


@per_scope
def _enabled_slots() -> dict[str, ModelSlot]:
    """The enabled slots by name: read once per turn (core.memo), from the shared cache when
    there is one, else from the database."""
    shared = _cache_is_shared()
    if shared:
        try:
            found = cache.get(SLOTS_CACHE_KEY)
        except Exception:  # the cache down: the database still answers
            log.warning("model slots: the cache did not answer", exc_info=True)
            found, shared = None, False
        if found is not None:
            return found
    rows = {row.name: row for row in ModelSlot.objects.filter(enabled=True).order_by("name")}
    if shared:
        try:
            cache.set(SLOTS_CACHE_KEY, rows, SLOTS_CACHE_SECONDS)
        except Exception:
            log.warning("model slots: the cache did not answer", exc_info=True)
    return rows


def slots_forget() -> None:
    """After a slot changed: the next read goes to the database."""
    if _cache_is_shared():
        try:
            cache.delete(SLOTS_CACHE_KEY)
        except Exception:
            log.warning("model slots: the cache did not answer", exc_info=True)


def endpoint_for_slot(*, slot: str) -> Endpoint:
    """The endpoint a slot's calls go to, or an honest error when staff configured none."""
    row = _enabled_slots().get(slot)
    if row is None:
        raise ModelError("no-model-configured", f"no model is configured for slot {slot!r}")
    return Endpoint(
        slot=row.name,
        base_url=row.base_url,
        model=row.model,
        api_key=row.api_key(),
        max_output_tokens=row.max_output_tokens,
        # An unchecked value (written past the admin) is refused by the gateway when used.
        reasoning_off=row.reasoning_off or None,
    )


def slot_configured(*, slot: str) -> bool:
    """Whether staff pointed this slot at an endpoint (session pages pre-select model packages)."""
    return slot in _enabled_slots()


def slot_names() -> list[str]:
    """Names of the slots staff configured and enabled, for settings panels and slot pickers."""
    return list(_enabled_slots())


def slot_models() -> dict[str, str]:
    """slot name -> the model name staff set for it (enabled slots); no key or URL leaves here."""
    return dict(ModelSlot.objects.filter(enabled=True).values_list("name", "model"))
