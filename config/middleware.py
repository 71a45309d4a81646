"""A guard in front of /api/: a NUL character never reaches the database, and a body over the
upload limit is refused in the API's error shape.

PostgreSQL text cannot hold NUL (0x00) and refuses the whole statement, so an address, query
or JSON body with one would otherwise end as a 500 (and SQLite would store it). It is refused
here, once for every operation, as a 422 in the one error shape (docs/api.md).

This guard is the first to read an /api/ request's body, so a body over
DATA_UPLOAD_MAX_MEMORY_SIZE fails here: it answers 400 `body_too_large` as JSON rather than
Django's HTML "Bad Request" page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from core.errors import error_body, issue, pointer

NUL = "\x00"


def _in_json(value: Any, tokens: list[str | int]) -> list[str | int] | None:
    if isinstance(value, str):
        return tokens if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if NUL in str(key):
                return [*tokens, str(key)]
            found = _in_json(item, [*tokens, str(key)])
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _in_json(item, [*tokens, index])
            if found is not None:
                return found
    return None


def _nul_pointer(request: HttpRequest) -> str | None:
    if NUL in request.path:
        return "/path"
    for name, values in request.GET.lists():
        if NUL in name or any(NUL in v for v in values):
            return pointer(["query", name])
    # Not a multipart upload's body: reading it here would refuse any file over
    # DATA_UPLOAD_MAX_MEMORY_SIZE (the install API takes ZIPs up to 20 MiB; Django counts only
    # the non-file fields of a multipart body against that limit). Every other body is read
    # here, so one over the limit is refused in the API's shape (RequestDataTooBig).
    if request.content_type.startswith("multipart/"):
        return None
    body = request.body
    if "json" in request.content_type and body and b"\\u0000" in body:
        try:
            found = _in_json(json.loads(body), ["body"])
        except ValueError:
            return None  # the API answers 400 for a body that is not JSON
        if found is not None:
            return pointer(found)
    return None


def api_nul_guard(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    def middleware(request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                where = _nul_pointer(request)
            except RequestDataTooBig:
                return _too_big()
            if where is not None:
                message = f"{where}: a NUL character (0x00) cannot be stored"
                details = {"issues": [issue(where, "nul", "a NUL character cannot be stored")]}
                return JsonResponse(error_body("invalid", message, details), status=422)
        return get_response(request)

    return middleware


def _too_big() -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    message = f"the request body is larger than this server takes ({limit} bytes)"
    return JsonResponse(error_body("body_too_large", message, {"limit": limit}), status=400)
