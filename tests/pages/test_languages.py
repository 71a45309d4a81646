"""Languages: the hub's interface in English and Simplified Chinese (Django i18n), packages'
own translations (PLUGIN.<locale>.md, locales/*.yaml) on cards, detail pages and the API,
chosen by ?lang=, a per-user switch, or Accept-Language.

Personas: Alice switches to Chinese; the anonymous visitor sends Accept-Language."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def card_names(html: str) -> str:
    return html[html.index('class="results"') :]


def test_accept_language_serves_chinese_interface_and_package_text(client, fresh_install):
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert '<html lang="zh-hans">' in html
    assert "<h1>插件</h1>" in html and ">搜索</button>" in html
    assert ">好感度</a>" in card_names(html)  # rapport's PLUGIN.zh-CN.md displayName
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<h1>Plugins</h1>" in english and ">Rapport</a>" in card_names(english)


def test_the_detail_page_speaks_the_language(client, fresh_install):
    html = client.get("/packages/rapport/?lang=zh").content.decode()
    assert "<h1>好感度</h1>" in html
    assert ">概览</a>" in html and "<dt>它做什么</dt>" in html
    assert "记住每个角色对玩家的感受" in html
    assert "一个语言模型，由管理员接入本站（模型槽位 utility）" in html


def test_the_api_takes_lang_and_accept_language(client, fresh_install):
    by_query = client.get("/api/packages", {"q": "rapport", "lang": "zh"}).json()
    assert by_query["items"][0]["displayName"] == "好感度"
    by_header = client.get("/api/packages/rapport", HTTP_ACCEPT_LANGUAGE="zh-Hans").json()
    assert by_header["displayName"] == "好感度"
    # ?lang= wins over the header; an unknown language falls back to the manifest's own text.
    assert (
        client.get("/api/packages/rapport", {"lang": "en"}, HTTP_ACCEPT_LANGUAGE="zh").json()[
            "displayName"
        ]
        == "Rapport"
    )
    assert client.get("/api/packages/rapport", {"lang": "xx"}).json()["displayName"] == "Rapport"


def test_the_switch_persists_per_user(client, fresh_install, alice):
    from accounts.models import Preference

    client.force_login(alice)
    answer = client.post("/language/", {"language": "zh-hans", "next": "/worlds/"})
    assert answer.status_code == 302 and answer["Location"] == "/worlds/"
    assert Preference.objects.get(user=alice).language == "zh-hans"
    # Another browser, no cookie, an English Accept-Language: Alice still gets Chinese after login.
    other = Client()
    other.post("/accounts/login/", {"username": "alice", "password": "alice-password"})
    html = other.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<h1>插件</h1>" in html
    # Refusals: a language the hub does not speak, and an off-site next.
    assert client.post("/language/", {"language": "tlh"}).status_code == 400
    away = client.post("/language/", {"language": "en", "next": "https://evil.example/"})
    assert away["Location"] == "/"


def test_an_anonymous_switch_lives_in_the_cookie(client, fresh_install):
    client.post("/language/", {"language": "zh-hans"})
    assert "<h1>插件</h1>" in client.get("/").content.decode()


def test_the_tokens_page_speaks_chinese(client, alice):
    client.force_login(alice)
    html = client.get("/accounts/tokens/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "创建令牌" in html and "还没有令牌。" in html
    assert "Create a token" not in html
    english = client.get("/accounts/tokens/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Create a token" in english and "创建令牌" not in english
