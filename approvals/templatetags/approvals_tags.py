"""{% approval_panel package %}: the approval state of a package, for its catalogue page."""

from __future__ import annotations

import json
from typing import Any

from django import template

from approvals.selectors import package_approval_panel

register = template.Library()


@register.inclusion_tag("approvals/_panel.html", takes_context=True)
def approval_panel(context: template.Context, package: Any) -> dict[str, Any]:
    data = package_approval_panel(package=package)
    request = context.get("request")
    user = getattr(request, "user", None)
    data["user_is_staff"] = bool(user is not None and user.is_authenticated and user.is_staff)
    data["request"] = request
    return data


@register.filter
def pretty_json(value: Any) -> str:
    # Autoescaping still applies to the result: plugin text stays text.
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@register.simple_tag
def pending_approvals() -> int:
    """How many approval requests wait for staff: the header's count (one COUNT query, asked
    only on pages a staff member sees)."""
    from approvals.models import ApprovalRequest

    return ApprovalRequest.objects.filter(state=ApprovalRequest.State.PENDING).count()
