from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see and revoke anyone's tokens here; the token itself is never shown."""

    list_display = ("prefix", "name", "user", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("user", "prefix", "digest", "created_at", "last_used_at")
    fields = ("user", "name", "prefix", "digest", "created_at", "last_used_at", "revoked_at")

    def has_add_permission(self, request):  # noqa: ANN001 (admin's signature)
        return False
