"""Every page renders without inline script, inline event handlers or style attributes, so a
Content-Security-Policy without 'unsafe-inline' can serve it unchanged."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest


class InlineFinder(HTMLParser):
    """Collects what a strict CSP would refuse: <script> with a body, on*= handlers, style=,
    <style> elements and javascript: addresses."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script":
            self._in_script = "src" not in names
        if tag == "style":
            self.found.append("<style> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if name == "style":
                self.found.append(f"<{tag} style=...>")
            if name.startswith("hx-on"):
                self.found.append(f"<{tag} {name}=...> (htmx evaluates it as script)")
            if name in {"href", "src", "action"} and (value or "").strip().lower().startswith(
                "javascript:"
            ):
                self.found.append(f"<{tag} {name}=javascript:...>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.found.append(f"inline <script> body: {data.strip()[:60]!r}")


def inline_code(html: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(html)
    return finder.found


def test_the_finder_sees_each_kind_of_inline_code() -> None:
    found = inline_code(
        '<script>alert(1)</script><a onclick="x()" href="javascript:y()">a</a>'
        '<p style="color:red"></p><style>p{}</style><div hx-on:click="z()"></div>'
        '<script src="/static/js/hub.js"></script>'
    )
    assert len(found) == 6, found


@pytest.mark.django_db
def test_no_page_carries_inline_script_handlers_or_styles(
    client, harbor_session, alice, bob
) -> None:
    session = harbor_session
    pages = {
        None: [
            "/",
            "/packages/storyteller/",
            "/packages/rapport/",
            "/accounts/login/",
            "/nowhere/",
        ],
        alice: [
            "/worlds/",
            "/worlds/harbor-nights/",
            "/sessions/",
            "/sessions/new/?world=harbor-nights",
            f"/sessions/{session.pk}/",
            f"/jobs/sessions/{session.pk}/panel/",
            "/sources/",
            "/sources/localfeed/",
        ],
        bob: ["/approvals/", "/jobs/", "/packages/satchel/"],
    }
    checked = 0
    for user, urls in pages.items():
        client.logout()
        if user is not None:
            client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code in {200, 404}, (url, response.status_code)
            html = response.content.decode()
            assert inline_code(html) == [], url
            checked += 1
    assert checked == 16
