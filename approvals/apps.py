from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"

    def ready(self) -> None:
        # The catalogue's sync and pages call up into approvals through these slots.
        from approvals.selectors import approval_seen_hashes, packages_usability
        from approvals.services import approval_request_sync
        from catalogue import callouts

        callouts.approval_request_sync.register(approval_request_sync)
        callouts.approval_seen_hashes.register(approval_seen_hashes)
        callouts.packages_usability.register(packages_usability)
