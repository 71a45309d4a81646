"""A package's README on its Overview tab: Markdown rendered and sanitised, relative images and
links resolved inside the package folder (and served from it, confined) or dropped; the plain
words box; approval state where people choose packages.

Personas: the anonymous visitor reads package pages; Alice starts sessions; Bob denied Lantern.
"""

from __future__ import annotations

import re

import pytest

from catalogue.readme import markdown_html

pytestmark = pytest.mark.django_db


def overview(html: str) -> str:
    return html[html.index('id="overview"') : html.index('id="details"')]


def test_the_readme_is_rendered_sanitised_and_confined(client, community_dir, fresh_install):
    html = client.get("/packages/lantern/").content.decode()
    readme = re.search(
        r'<section class="card readme" aria-label="README">(.*?)</section>', html, re.S
    )
    assert readme, "the README section is missing"
    body = readme.group(1)
    assert "<h1>Lantern</h1>" in body
    assert "<table>" in body and "<td>brightness</td>" in body
    # A relative image inside the package is served from the package folder.
    assert '<img src="/packages/lantern/files/img/lantern.png" alt="the lantern">' in body
    # A remote image (it would track readers) and one outside the folder are dropped; words stay.
    assert "tracker.example" not in body and "far away" in body
    assert "etc/secret" not in body and "outside" in body
    # Relative links resolve to served files; code is not served, so that link loses its href.
    assert '<a href="/packages/lantern/files/CHANGES.md"' in body
    assert "server/index.js" not in body and ">code</a>" in body
    assert '<a href="https://lantern.example/" rel="noopener noreferrer nofollow">home</a>' in body
    assert 'href="javascript' not in body and "[evil](javascript:alert(1))" in body
    assert "<script" not in body and "&lt;script&gt;alert(2)&lt;/script&gt;" in body


def test_the_page_shows_the_readme_the_sync_read_and_reads_no_file(
    client, community_dir, fresh_install, monkeypatch
):
    from catalogue.models import Package

    package = Package.objects.get(package_id="lantern")
    assert "# Lantern" in package.readme  # kept with the row by the sync's loader
    opened: list[str] = []
    real_open = open

    def opening(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", opening)
    monkeypatch.setattr("pathlib.Path.read_text", lambda *a, **k: opened.append("read_text"))
    html = client.get("/packages/lantern/").content.decode()
    monkeypatch.undo()
    assert "<h1>Lantern</h1>" in overview(html)
    assert not [f for f in opened if package.source_dir in f or f == "read_text"], opened


def test_package_files_are_served_only_from_inside_the_folder(client, community_dir, fresh_install):
    image = client.get("/packages/lantern/files/img/lantern.png")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert image["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in image["Content-Security-Policy"]
    text = client.get("/packages/lantern/files/CHANGES.md")
    assert text["Content-Type"] == "text/plain; charset=utf-8"
    assert b"first light" in b"".join(text.streaming_content)
    for refused in (
        "img/escape.png",  # a symlink out of the folder
        "../lantern/../../outside.png",
        "%2e%2e/outside.png",
        ".secret.txt",  # hidden files
        "server/index.js",  # code is never served
        "PLUGIN.md/../../outside.png",
        "nope.png",
    ):
        assert client.get(f"/packages/lantern/files/{refused}").status_code == 404, refused
    assert client.get("/packages/no-such/files/README.md").status_code == 404


def test_markdown_never_lets_markup_or_schemes_through(tmp_path):
    html = markdown_html(
        "<img src=x onerror=alert(1)> [x](data:text/html,hi) [y](vbscript:z) "
        "[t](#tables) ![i](data:image/png;base64,AAAA)",
        package_id="p",
        package_dir=tmp_path,
    )
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="data:' not in html and 'href="vbscript:' not in html and 'src="data:' not in html
    assert '<a href="#tables"' in html


def test_the_plain_words_box_speaks_to_players(client, fresh_install):
    html = client.get("/packages/rapport/").content.decode()
    box = overview(html)
    for heading in (
        "What it does",
        "What it needs",
        "What it may do",
        "How to add it to a session",
    ):
        assert f"<dt>{heading}</dt>" in box
    assert "A language model, which staff connect to the hub (model slot utility)" in box
    assert "tick it under Plugins" in box
    # Manifest jargon stays in Details.
    assert "reads " not in box and "plugin-data:" not in box
    details = html[html.index('id="details"') :]
    assert "Tabs" not in details[:0]
    # Integer ranges print as integers.
    assert re.search(r"range -?\d+ to \d+", details) and not re.search(r"range -?\d+\.0 ", details)


def test_a_code_only_package_says_nothing_of_what_it_tells_the_model(client, fresh_install):
    html = client.get("/packages/dice/").content.decode()
    assert "What it tells the model" not in html


def test_a_package_that_publishes_an_event_does_not_say_it_has_no_contract(client, fresh_install):
    from catalogue.models import Package

    publishers = [
        p.package_id
        for p in Package.objects.all()
        if p.events.exists() and not p.contract_links.exists()
    ]
    assert publishers, "a bundled package publishes an event without any contract"
    html = client.get(f"/packages/{publishers[0]}/").content.decode()
    assert "neither provides nor requires any contract" not in html
    assert "for other packages to react to" in html


def test_denied_packages_show_so_and_cannot_be_ticked(client, lantern_denied, alice):
    from worlds.models import World

    listing = client.get("/?q=lantern").content.decode()
    card = listing[listing.index('data-package="lantern"') :]
    card = card[: card.index("</article>")]
    assert "denied by staff" in card
    detail = client.get("/packages/lantern/").content.decode()
    assert "denied by staff" in detail and "Not yet: it was denied by staff." in detail

    World.objects.filter(world_id="harbor-nights").update(plugins=["storyteller", "lantern"])
    client.force_login(alice)
    form = client.get("/sessions/new/?world=harbor-nights").content.decode()
    pick = form[form.index('data-approval="denied"') :]
    pick = pick[: pick.index("</label>")]
    assert 'value="lantern"' in pick and " disabled" in pick and " checked" not in pick
    assert "Cannot be added: package lantern@1.0.0 was denied by staff." in pick
