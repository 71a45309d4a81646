"""permissions.http origins that can never be reached are refused when a package is validated."""

from __future__ import annotations

from typing import Any

import pytest

from catalogue.manifest import load_package
from core.addresses import host_address, is_public_address

from .conftest import PackageFactory, codes, put
from .test_validate_plugin_command import run

P = "PLUGIN.md"


@pytest.fixture(autouse=True)
def _private_not_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COVEL_HTTP_ALLOW_PRIVATE", raising=False)


@pytest.mark.parametrize(
    "origin",
    [
        "https://localhost",
        "https://api.localhost:8443",
        "https://127.1",
        "https://2130706433",
        "https://0x7f.1",
        "https://0177.0.0.1",
        "https://0.0.0.0",
        "https://10.0.0.7",
        "https://169.254.169.254",
        "https://[::1]",
        "https://[::ffff:127.0.0.1]",
        "https://[::127.0.0.1]",
        "https://[::ffff:0:7f00:1]",
        "https://[64:ff9b::7f00:1]",
        "https://[64:ff9b::a00:7]",
        "https://[2002:7f00:1::]",
        "https://[fe80::1]",
    ],
)
def test_a_non_public_origin_is_refused_with_its_path(
    make_package: PackageFactory, base: dict[str, Any], origin: str
) -> None:
    put(base, "/permissions/http/0/origin", origin)
    result = load_package(make_package(base))
    assert codes(result) == [(P, "/permissions/http/0/origin", "origin-not-public")]
    assert "can never be reached" in result.errors[0].message
    assert repr(origin) in result.errors[0].message


def test_a_runtime_origin_is_checked_too(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    runtime = {
        "id": "fetch",
        "function": {},
        "permissions": {"http": [{"origin": "https://127.0.0.1:8080"}]},
    }
    put(base, "/runtime", runtime)
    result = load_package(make_package(base))
    assert "origin-not-public" in [c for _, _, c in codes(result)], codes(result)
    issue = next(i for i in result.errors if i.code == "origin-not-public")
    assert issue.path.endswith("/permissions/http/0/origin")


@pytest.mark.parametrize(
    "origin", ["https://api.example.com", "https://93.184.216.34", "https://[2606:4700::1111]"]
)
def test_public_origins_and_names_pass(
    make_package: PackageFactory, base: dict[str, Any], origin: str
) -> None:
    put(base, "/permissions/http/0/origin", origin)
    assert load_package(make_package(base)).ok


def test_the_operator_setting_lets_private_origins_through(
    make_package: PackageFactory, base: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVEL_HTTP_ALLOW_PRIVATE", "true")
    put(base, "/permissions/http/0/origin", "https://localhost:8443")
    assert load_package(make_package(base)).ok


def test_validate_plugin_prints_the_refusal(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/permissions/http/0/origin", "https://2130706433")
    done = run(str(make_package(base)))
    assert done.returncode == 1
    assert any(
        line.startswith("  PLUGIN.md:/permissions/http/0/origin 'https://2130706433' can never be")
        and line.endswith("[origin-not-public]")
        for line in done.stdout.splitlines()
    ), done.stdout


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("example.com", None),
        ("08.1.1.1", None),
        ("1.2.3.4.5", None),
    ],
)
def test_host_address_reads_inet_aton_forms(host: str, address: str | None) -> None:
    found = host_address(host)
    assert (None if found is None else str(found)) == address


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("::127.0.0.1", False),
        ("::ffff:0:7f00:1", False),
        ("64:ff9b::7f00:1", False),
        ("64:ff9b:1:7f00:0:100::", False),  # NAT64 local-use /48
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("2002:a00:1::", False),  # 6to4 of 10.0.0.1
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo, client 127.0.0.1
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::808:808", True),
        ("2002:808:808::1", True),
        ("::", False),
        ("::1", False),
    ],
)
def test_ipv6_addresses_count_as_the_ipv4_they_carry(address: str, public: bool) -> None:
    assert is_public_address(address) is public
