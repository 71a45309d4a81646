"""Read-mostly admin views of the source plugin index (sync_sources writes it)."""

from django.contrib import admin

from sources.models import SourceJob, SourceJobRun, SourcePlugin


@admin.register(SourcePlugin)
class SourcePluginAdmin(admin.ModelAdmin):
    list_display = ("plugin_id", "name", "state", "synced_at")
    list_filter = ("state",)
    search_fields = ("plugin_id", "name")
    readonly_fields = (
        "plugin_id",
        "folder",
        "content_hash",
        "manifest",
        "errors",
        "warnings",
        "synced_at",
    )


@admin.register(SourceJob)
class SourceJobAdmin(admin.ModelAdmin):
    list_display = ("plugin", "name", "every", "state", "failures", "next_run_at", "active")
    list_filter = ("state", "active")


@admin.register(SourceJobRun)
class SourceJobRunAdmin(admin.ModelAdmin):
    list_display = ("job", "outcome", "started_at", "ended_at", "next_run_at")
    list_filter = ("outcome",)
    readonly_fields = (
        "job",
        "outcome",
        "scheduled_for",
        "started_at",
        "ended_at",
        "error",
        "result",
        "wait_ns",
        "next_run_at",
    )
