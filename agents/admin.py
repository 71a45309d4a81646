from django.contrib import admin

from agents.models import ModelSlot


@admin.register(ModelSlot)
class ModelSlotAdmin(admin.ModelAdmin):
    # The key lives in the environment; the admin only ever sees the variable's name.
    list_display = ("name", "model", "base_url", "api_key_env", "enabled")
    list_filter = ("enabled",)
