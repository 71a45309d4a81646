"""The language switch: the choice goes in the language cookie and, for a signed-in user, in
their Preference, so it follows them to other browsers."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.language import SESSION_KEY, supported_language
from accounts.services import preference_language_set


@require_POST
def language_set(request: HttpRequest) -> HttpResponse:
    wanted = request.POST.get("language", "")
    code = supported_language(wanted)
    if code is None:
        return HttpResponseBadRequest("unsupported language")
    if request.user.is_authenticated:
        preference_language_set(user=request.user, language=code)
        request.session[SESSION_KEY] = code
    target = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = "/"
    response = HttpResponseRedirect(target)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        code,
        max_age=365 * 24 * 3600,
        samesite="Lax",
        secure=request.is_secure(),
    )
    return response
