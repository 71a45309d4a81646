"""Mail to staff when an approval request starts waiting for them.

Optional: sent only when mail is configured (settings.EMAIL_HOST for SMTP, or any other mail
backend chosen on purpose, such as the locmem one Django's tests use), to every active staff
member with an address. Sent
after the transaction that wrote the request commits, so a rolled-back sync mails nobody; a
failing mail server is logged, never raised into the sync that found the package.

It listens for the journal's "requested" entry (approvals.services writes one for every new
pending request and nothing else), so the services need no change to be heard.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models.signals import post_save

log = logging.getLogger(__name__)


SMTP = "django.core.mail.backends.smtp.EmailBackend"


def mail_configured() -> bool:
    return bool(settings.EMAIL_HOST) if settings.EMAIL_BACKEND == SMTP else True


def staff_addresses() -> list[str]:
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)))


def approval_mail_staff(*, request_id: int) -> int:
    """Mail every staff member about one waiting request; how many were mailed."""
    from approvals.models import ApprovalRequest

    if not mail_configured():  # asked first: a first sync of 10,000 packages reads no rows here
        return 0
    request = ApprovalRequest.objects.filter(pk=request_id).first()
    if request is None or request.state != ApprovalRequest.State.PENDING:
        return 0
    to = staff_addresses()
    if not to:
        return 0
    asks = request.permissions or {}
    files = len(asks.get("code") or [])
    origins = sorted({str(g.get("origin")) for g in asks.get("http") or []})
    body = (
        f"{request.package_key} {request.version} waits for a staff decision.\n\n"
        f"Server code files: {files}\n"
        f"HTTP origins: {', '.join(origins) or 'none'}\n\n"
        f"Read its code and decide on the hub's page /approvals/{request.pk}/\n"
    )
    try:
        send_mail(
            subject=f"[Covel Hub] {request.package_key} {request.version} waits for approval",
            message=body,
            from_email=None,
            recipient_list=to,
        )
    except Exception:  # a mail outage must not fail the sync that found the package
        log.exception("could not mail staff about approval request %s", request.pk)
        return 0
    return len(to)


def _on_journal(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if created and instance.action == "requested":
        request_id = instance.request_id
        transaction.on_commit(lambda: approval_mail_staff(request_id=request_id))


def connect() -> None:
    from approvals.models import JournalEntry

    post_save.connect(_on_journal, sender=JournalEntry, dispatch_uid="approvals.mail")
