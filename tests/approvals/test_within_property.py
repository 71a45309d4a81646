"""Properties of the carry-over rule: a set is within itself and within any wider set, and one
more origin, method or code file always leaves it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from approvals.permissions import HTTP_METHODS, is_within

origins = st.sampled_from([f"https://h{i}.example" for i in range(4)])
runtimes = st.sampled_from([None, "p/a", "p/b"])
grant = st.builds(
    lambda runtime, origin, methods: {
        "runtime": runtime,
        "origin": origin,
        "methods": sorted(methods),
    },
    runtimes,
    origins,
    st.sets(st.sampled_from(HTTP_METHODS), min_size=1),
)
code = st.builds(
    lambda path, sha: {"path": path, "sha256": sha, "roles": ["module"]},
    st.sampled_from(["server/index.js", "tools/a.js", "handler.js"]),
    st.sampled_from(["a" * 64, "b" * 64]),
)
permission_sets = st.builds(
    lambda c, h: {"code": c, "http": h}, st.lists(code, max_size=3), st.lists(grant, max_size=4)
)


@given(permission_sets)
def test_a_set_is_within_itself(permissions):
    assert is_within(permissions, permissions)


@given(permission_sets, permission_sets)
def test_a_set_is_within_its_union_with_another(a, b):
    union = {"code": a["code"] + b["code"], "http": a["http"] + b["http"]}
    assert is_within(a, union) and is_within(b, union)


@given(permission_sets)
def test_a_new_origin_or_new_code_is_never_within(permissions):
    new_origin = {
        **permissions,
        "http": [
            *permissions["http"],
            {"runtime": None, "origin": "https://new.example", "methods": ["GET"]},
        ],
    }
    new_code = {
        **permissions,
        "code": [*permissions["code"], {"path": "tools/new.js", "sha256": "c" * 64, "roles": []}],
    }
    assert not is_within(new_origin, permissions)
    assert not is_within(new_code, permissions)
