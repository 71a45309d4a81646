from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"

    def ready(self) -> None:
        from approvals import mail

        mail.connect()  # optional mail to staff when a request waits (approvals/mail.py)
