from __future__ import annotations

from typing import Any

from django import template
from django.http import QueryDict

register = template.Library()


def query_string(params: QueryDict, **changes: Any) -> str:
    """The current query string with some parameters replaced (None removes one)."""
    query = params.copy()
    for key, value in changes.items():
        query.pop(key, None)
        if value is not None and value != "":
            query[key] = str(value)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag(takes_context=True)
def page_url(context: dict[str, Any], number: int) -> str:
    return query_string(context["request"].GET, page=number)


@register.filter
def stage_label(stage: str) -> str:
    return {"on-demand": "On demand (manual, event or sub-agent)"}.get(stage, stage)
