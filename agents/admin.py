from django.contrib import admin
from django.db import models

from agents.models import ModelSlot


@admin.register(ModelSlot)
class ModelSlotAdmin(admin.ModelAdmin):
    # A base URL typed without a scheme is taken as https (Django 6's default, said now).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    # The key lives in the environment; the admin only ever sees the variable's name.
    list_display = ("name", "model", "base_url", "api_key_env", "can_turn_reasoning_off", "enabled")
    list_filter = ("enabled",)
    fields = (
        "name",
        "base_url",
        "model",
        "api_key_env",
        "max_output_tokens",
        "reasoning_off",
        "enabled",
    )

    @admin.display(boolean=True, description="reasoning off")
    def can_turn_reasoning_off(self, slot: ModelSlot) -> bool:
        return bool(slot.reasoning_off)
