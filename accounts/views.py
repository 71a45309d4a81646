"""Sign-in with limits, password reset only when mail is configured, personal API tokens, and
the language switch (the choice goes in the language cookie and, for a signed-in user, in their
Preference, so it follows them to other browsers)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from accounts.language import SESSION_KEY, supported_language
from accounts.limits import client_address, login_failed, login_locked, login_succeeded
from accounts.selectors import token_list
from accounts.services import TokenError, preference_language_set, token_create, token_revoke

LOCKED_MESSAGE = "Too many failed sign-ins. Wait a few minutes and try again."


class LimitedAuthenticationForm(AuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request) if self.request else ""
        if login_locked(username=username, address=address):
            self.locked = True
            raise forms.ValidationError(LOCKED_MESSAGE, code="locked")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            login_failed(username=username, address=address)
            raise
        login_succeeded(username=username, address=address)
        return cleaned


class LoginView(auth_views.LoginView):
    form_class = LimitedAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "locked", False):
            response.status_code = 429
            response["Retry-After"] = str(settings.COVEL_LOGIN_FAILURE_WINDOW_SECONDS)
        return response


def password_reset(request: HttpRequest) -> HttpResponse:
    """Django's reset form when a mail server is configured; otherwise a plain refusal (no
    attempt to send, so no traceback in the log and no promise of a mail that never comes)."""
    if settings.EMAIL_HOST:
        return auth_views.PasswordResetView.as_view()(request)
    return render(request, "accounts/password_reset_unavailable.html", status=404)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    created = error = None
    if request.method == "POST":
        try:
            created = token_create(user=request.user, name=request.POST.get("name", ""))
        except TokenError as exc:
            error = str(exc)
    response = render(
        request,
        "accounts/tokens.html",
        {
            "tokens": token_list(user=request.user),
            # Shown on this one response only; the hub keeps nothing but its hash.
            "created": created,
            "error": error,
        },
        status=400 if error else 200,
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token_revoke(user=request.user, token_id=token_id)
    except TokenError:
        return HttpResponse("no such token of yours", status=404, content_type="text/plain")
    return HttpResponseRedirect(reverse("accounts:tokens"))


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
