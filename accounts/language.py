"""Which language a request is served in.

Precedence: `?lang=` on the request (the API and shared links), then the signed-in user's stored
choice, then what LocaleMiddleware found (the language cookie, then Accept-Language). Package
text follows the same language (catalogue/locales.py picks the package's closest locale).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils import translation

SESSION_KEY = "covel_language"
# Tags people and packages write for the languages the hub speaks.
ALIASES = {"zh": "zh-hans", "zh-cn": "zh-hans", "zh-sg": "zh-hans", "zh-hans-cn": "zh-hans"}


def supported_language(tag: str) -> str | None:
    """settings.LANGUAGES' code for a tag (case-insensitive, with aliases), or None."""
    tag = (tag or "").strip().lower().replace("_", "-")
    tag = ALIASES.get(tag, tag)
    codes = {code for code, _ in settings.LANGUAGES}
    if tag in codes:
        return tag
    base = tag.split("-")[0]
    return base if base in codes else None


class UserLanguageMiddleware:
    """After authentication: ?lang= and the user's preference override LocaleMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = supported_language(request.GET.get("lang", "")) if "lang" in request.GET else None
        if chosen is None and hasattr(request, "session"):
            # Copied from the user's Preference at login (no query per request). Reading the
            # session may need the database: without a free connection the view's own query
            # answers 503 (core.middleware), so the language falls back instead of a 500 here.
            try:
                stored = request.session.get(SESSION_KEY, "")
            except OperationalError:
                stored = ""
            chosen = supported_language(stored) if stored else None
        if chosen is not None:
            translation.activate(chosen)
            request.LANGUAGE_CODE = chosen
        return self.get_response(request)


def copy_preference_to_session(sender, request, user, **kwargs) -> None:
    """user_logged_in: the stored choice follows the user into this browser's session."""
    from accounts.models import Preference

    stored = Preference.objects.filter(user=user).values_list("language", flat=True).first()
    if stored and request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = stored
