"""A schema-driven fuzz of the API (schemathesis over the WSGI app, in this process).

Every operation of /api/openapi.json gets generated requests, valid ones and invalid ones, from
one persona (anonymous, a player, staff). Each answer is checked against what the document
declares for that operation: no 5xx, a declared status code, a declared content type, a body
that matches the declared schema, and every 4xx body in the one error shape {code, message,
details}. The figures are counted per check, so a run can report all it found at once.

Used by tests/config/test_openapi_fuzz.py (a bounded run in the suite) and runnable on its own
for a bigger run (see that module).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Failure classes by the figure they count in.
FIGURE_OF = {
    "ServerError": "server_errors",
    "ContentTypeServerError": "server_errors",
    "UndefinedStatusCode": "undocumented_statuses",
    "JsonSchemaError": "schema_violations",
    "MalformedJson": "schema_violations",
    "UndefinedContentType": "undocumented_content_types",
    "MissingContentType": "undocumented_content_types",
}


@dataclass
class Report:
    requests: int = 0
    figures: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    # (figure, "METHOD /path/{template}", status): one entry per distinct finding
    distinct: set[tuple[str, str, int]] = field(default_factory=set)
    seconds: float = 0.0

    def add(self, figure: str, where: str, operation: str = "", status: int = 0) -> None:
        self.figures[figure] += 1
        self.distinct.add((figure, operation, status))
        seen = self.examples.setdefault(figure, [])
        if len(seen) < 8 and where not in seen:
            seen.append(where)

    def summary(self) -> str:
        lines = [f"{self.requests} requests in {self.seconds:.1f} s"]
        for name in (
            "server_errors",
            "schema_violations",
            "undocumented_statuses",
            "undocumented_content_types",
            "error_without_code",
            "other",
        ):
            pairs = sum(1 for d in self.distinct if d[0] == name)
            lines.append(f"  {name}: {self.figures.get(name, 0)} ({pairs} operation/status pairs)")
            lines.extend(f"    {example}" for example in self.examples.get(name, []))
        lines.append(
            "  statuses: " + ", ".join(f"{k}×{v}" for k, v in sorted(self.statuses.items()))
        )
        return "\n".join(lines)


def error_shape_problem(status: int, body: Any) -> str | None:
    """What is wrong with a 4xx body, or None: the one error shape is {code, message, details}."""
    if not isinstance(body, dict):
        return "not a JSON object"
    missing = [k for k in ("code", "message") if not isinstance(body.get(k), str) or not body[k]]
    if missing:
        return f"no {' or '.join(missing)}"
    if not isinstance(body.get("details"), dict):
        return "details is not an object"
    return None


def wsgi_app() -> WSGIHandler:
    """Django's WSGI handler, with its per-request connection closing off (as the test client
    does): the test's transaction lives on that connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    return WSGIHandler()


def restore_signals() -> None:
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def fuzz(
    *,
    app: Any,
    cookies: dict[str, str],
    headers: dict[str, str],
    known: dict[str, str],
    examples: int,
    fixed_query: dict[tuple[str, str], dict[str, Any]] | None = None,
    only: set[tuple[str, str]] | None = None,
) -> Report:
    """Run `examples` positive and `examples` negative cases against every operation.

    known: real path parameter values (by name), used for about half the cases so requests reach
    real rows, not only 404s. fixed_query: per (method, path), query values to keep fixed (an
    event stream's wait, say). only: just these (method, path) operations.
    """
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    report = Report()
    started = time.monotonic()
    # Every 4xx is logged by django.request; thousands of them would drown the test's output.
    logs = [logging.getLogger(n) for n in ("django.request", "django.security.csrf")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.ERROR)
    try:
        _fuzz_operations(schema, report, cookies, headers, known, examples, fixed_query, only)
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)
    report.seconds = time.monotonic() - started
    return report


def _fuzz_operations(schema, report, cookies, headers, known, examples, fixed_query, only) -> None:
    for result in schema.get_all_operations():
        operation = result.ok()
        if only is not None and (operation.method.upper(), operation.path) not in only:
            continue
        names = [p.name for p in operation.path_parameters]
        fixed = {n: known[n] for n in names if n in known}
        query = (fixed_query or {}).get((operation.method.upper(), operation.path))
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategies = [operation.as_strategy(generation_mode=mode, query=query)]
            # Negative cases with every path parameter fixed may have nothing left to break.
            if fixed and mode is GenerationMode.POSITIVE:
                strategies.append(
                    operation.as_strategy(generation_mode=mode, path_parameters=fixed, query=query)
                )
            _run_operation(
                report=report,
                strategy=st.one_of(*strategies),
                cookies=cookies,
                headers=headers,
                examples=examples,
            )


def _run_operation(
    *, report: Report, strategy: Any, cookies: dict, headers: dict, examples: int
) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        response = case.call(headers=dict(headers), cookies=dict(cookies))
        status = response.status_code
        report.requests += 1
        report.statuses[status] += 1
        operation = f"{case.method} {case.operation.path}"
        where = f"{case.method} {case.formatted_path} -> {status}"
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as group:
            for failure in group.exceptions:
                figure = FIGURE_OF.get(type(failure).__name__, "other")
                first = (failure.message or "").strip().splitlines()[:1]
                report.add(
                    figure,
                    f"{where}: {type(failure).__name__}: {' '.join(first)[:160]}",
                    operation,
                    status,
                )
        if 400 <= response.status_code < 500:
            try:
                body = response.json()
            except ValueError:
                body = None
            problem = error_shape_problem(response.status_code, body)
            if problem:
                report.add(
                    "error_without_code",
                    f"{where}: {problem}: {response.text[:120]}",
                    operation,
                    status,
                )

    try:
        run()
    except Unsatisfiable:
        pass  # nothing in this operation can be made invalid (negative mode)
