"""python manage.py approvals_sync: (re)compute the approval request of every community package.

sync_packages already does this for new and changed packages; run this after installing the
approvals app on a hub whose catalogue was synced before, or after restoring a database.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from approvals.selectors import package_usability
from approvals.services import approval_request_sync
from catalogue.models import Package


class Command(BaseCommand):
    help = "Record what each community package asks for, and show which ones wait for approval."

    def handle(self, *args: Any, **options: Any) -> None:
        for package in Package.objects.filter(trust=Package.Trust.COMMUNITY).order_by("package_id"):
            approval_request_sync(package=package)
            usability = package_usability(package_id=package.package_id)
            state = "usable" if usability.usable else "NOT usable"
            detail = usability.state if usability.usable else usability.reason
            self.stdout.write(f"{package.package_id}@{package.version}: {state} ({detail})")
