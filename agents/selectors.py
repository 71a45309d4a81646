from __future__ import annotations

from agents.gateway import Endpoint, ModelError
from agents.models import ModelSlot
from core.memo import per_scope


@per_scope
def _enabled_slots() -> dict[str, ModelSlot]:
    """The enabled slots by name: read once per turn (core.memo), every time elsewhere."""
    return {row.name: row for row in ModelSlot.objects.filter(enabled=True).order_by("name")}


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
