from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts: API tokens, sign-in limits and preferences"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from accounts.language import copy_preference_to_session

        user_logged_in.connect(copy_preference_to_session, dispatch_uid="accounts.language")
