from django.contrib import admin

from worlds.models import SessionPluginSettings, World


@admin.register(World)
class WorldAdmin(admin.ModelAdmin):
    list_display = ["world_id", "name", "state", "owner", "updated_at"]
    list_filter = ["state"]
    search_fields = ["world_id", "name"]
    # Presets are edited on the world page, which also rewrites world.yaml; here only the owner.
    readonly_fields = [
        "world_id",
        "name",
        "description",
        "author",
        "plugins",
        "plugin_settings",
        "characters",
        "character_schema",
        "lorebook",
        "source_dir",
        "state",
        "content_hash",
        "errors",
        "warnings",
        "created_at",
        "updated_at",
    ]


@admin.register(SessionPluginSettings)
class SessionPluginSettingsAdmin(admin.ModelAdmin):
    list_display = ["session", "package_id", "updated_at"]
    readonly_fields = ["session", "package_id", "values", "updated_at"]
