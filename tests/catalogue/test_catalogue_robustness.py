"""An invalid package's raw frontmatter may hold anything: indexing it must never fail."""

from __future__ import annotations

import datetime
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from catalogue.manifest.types import Issue
from catalogue.models import Package
from catalogue.services import package_index

pytestmark = pytest.mark.django_db

KEYS = [
    "id",
    "displayName",
    "description",
    "tags",
    "author",
    "provides",
    "requires",
    "conflicts",
    "homepage",
    "contributes",
    "runtime",
    "permissions",
    "version",
    "kind",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.dates()
    | st.datetimes()
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                KEYS
                + [
                    "name",
                    "url",
                    "links",
                    "tools",
                    "commands",
                    "settings",
                    "schedule",
                    "http",
                    "options",
                    "arguments",
                    "detached",
                    "ui",
                    "data",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)
frontmatter = st.dictionaries(st.sampled_from(KEYS), values, max_size=10)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=frontmatter)
# Found by Hypothesis: YAML gives NUL characters (PostgreSQL refuses them), .inf and dates.
@example(raw={"id": "\x00", "displayName": "\x00", "description": float("inf")})
@example(raw={"id": "a/b", "version": datetime.date(2024, 1, 1), "tags": [float("nan")]})
@example(raw={"tags": ["x" * 200 + "a", "x" * 200 + "b"], "requires": ["y" * 201, "y" * 202]})
def test_any_raw_frontmatter_is_indexed_as_an_invalid_package(make_result, tmp_path, client, raw):
    issue = Issue("PLUGIN.md", "", "schema", "does not match the schema")
    result = make_result(tmp_path / "weird", raw, errors=(issue,))
    package = package_index(
        result=result, source="community", content_hash="0" * 64, host_version="0.1.0"
    )
    package.refresh_from_db()
    assert package.state == Package.State.ERROR and package.errors == [issue.as_dict()]
    assert all(link.url.startswith("https://") for link in package.links.all())
    written = raw.get("id")
    expected = (
        written
        if isinstance(written, str) and re.fullmatch(r"[a-z0-9][a-z0-9-]*", written)
        else "weird"
    )
    assert package.package_id == expected
    assert client.get("/").status_code == 200
    assert client.get(f"/packages/{expected}/").status_code == 200
    assert client.get(f"/api/packages/{expected}").status_code == 200
    package.delete()
