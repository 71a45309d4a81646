"""Read-only admin views of the index: rows are written by sync_packages, never by hand."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from catalogue.models import Contract, Package, PackageContract, PackageTag, Runtime


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class TagInline(admin.TabularInline):
    model = PackageTag
    extra = 0
    fields = ("tag", "derived")


class ContractInline(admin.TabularInline):
    model = PackageContract
    extra = 0
    fields = ("contract", "relation", "is_default")


class RuntimeInline(admin.TabularInline):
    model = Runtime
    extra = 0
    fields = ("runtime_id", "kind", "stage", "trigger", "model_slot", "detached", "settle")


@admin.register(Package)
class PackageAdmin(ReadOnly):
    list_display = ("package_id", "version", "kind", "source", "trust", "state", "indexed_at")
    list_filter = ("state", "source", "trust", "kind")
    search_fields = ("package_id", "display_name", "description")
    inlines = [TagInline, ContractInline, RuntimeInline]


@admin.register(Contract)
class ContractAdmin(ReadOnly):
    search_fields = ("contract_id",)
