"""The Chinese interface reaches the session pages, the approvals pages and the catalogue's
filters (it used to stop at them): each page's own words come in Simplified Chinese."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


def test_the_session_pages_speak_chinese(client, harbor_session, alice):
    client.force_login(alice)
    listing = client.get("/sessions/", **ZH).content.decode()
    assert "<h1>你的会话</h1>" in listing and ">新会话</a>" in listing
    form = client.get("/sessions/new/", **ZH).content.decode()
    assert "<h1>新会话</h1>" in form and ">开始会话</button>" in form
    assert "此处不可用：needs a model" in form  # the reason itself is the engine's words
    page = client.get(f"/sessions/{harbor_session.pk}/", **ZH).content.decode()
    for words in ("面板与诊断", "诊断", "你的行动", "Enter 发送，Shift+Enter 换行", "暂停", "结束"):
        assert words in page, words
    assert 'data-t-usage="用法：' in page  # the words play.js writes come translated too


def test_the_approvals_pages_speak_chinese(client, community_dir, lantern_denied, bob):
    client.force_login(bob)
    queue = client.get("/approvals/", **ZH).content.decode()
    assert "<h1>包审批</h1>" in queue and "没有等待决定的申请。" in queue
    assert "已拒绝" in queue and ">denied<" not in queue
    detail = client.get(f"/approvals/{lantern_denied.pk}/", **ZH).content.decode()
    for words in ("待阅读的服务器代码", "服务器代码", "lantern 的日志", "批准"):
        assert words in detail, words


def test_the_catalogue_filters_speak_chinese(client, fresh_install):
    page = client.get("/", {"q": "notbk"}, **ZH).content.decode()
    for words in (
        "使用模型",
        "运行代码",
        "没有运行时",
        "任意契约",
        "仅有效的",
        "最近更新",
        "你是不是要找",
    ):
        assert words in page, words
    assert ">any<" not in page and "valid only" not in page
