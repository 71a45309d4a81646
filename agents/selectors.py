from __future__ import annotations

from agents.gateway import Endpoint, ModelError
from agents.models import ModelSlot


def endpoint_for_slot(*, slot: str) -> Endpoint:
    """The endpoint a slot's calls go to, or an honest error when staff configured none."""
    row = ModelSlot.objects.filter(name=slot, enabled=True).first()
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
    return ModelSlot.objects.filter(name=slot, enabled=True).exists()


def slot_names() -> list[str]:
    """Names of the slots staff configured and enabled, for settings panels and slot pickers."""
    return list(
        ModelSlot.objects.filter(enabled=True).order_by("name").values_list("name", flat=True)
    )


def slot_models() -> dict[str, str]:
    """slot name -> the model name staff set for it (enabled slots); no key or URL leaves here."""
    return dict(ModelSlot.objects.filter(enabled=True).values_list("name", "model"))
