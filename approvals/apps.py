from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"

    def ready(self) -> None:
        # The catalogue's sync and pages call up into approvals through these slots.
        from approvals.selectors import approval_seen_hashes, packages_usability
        from approvals.services import approval_request_sync, approval_requests_sync
        from catalogue import callouts

        callouts.approval_request_sync.register(approval_request_sync)
        callouts.approval_requests_sync.register(approval_requests_sync)
        callouts.approval_seen_hashes.register(approval_seen_hashes)
        callouts.packages_usability.register(packages_usability)

        # The catalogue (a lower floor) deletes a package's row when its folder is gone; it may
        # not import approvals, so the approvals app listens for that deletion instead.
        from django.db.models.signals import post_delete

        from catalogue.models import Package

        post_delete.connect(
            _package_removed, sender=Package, dispatch_uid="approvals-package-removed"
        )

        from approvals import mail

        mail.connect()  # optional mail to staff when a request waits (approvals/mail.py)


def _package_removed(sender: type, instance: object, **kwargs: object) -> None:
    """Close the pending requests of a package the catalogue just removed."""
    from approvals.services import approval_requests_withdraw_gone

    approval_requests_withdraw_gone(package_keys=[instance.package_id])  # type: ignore[attr-defined]
