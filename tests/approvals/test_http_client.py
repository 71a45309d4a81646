"""covel.http for plugin code, against a real HTTPS server on 127.0.0.1 with a throwaway CA.

The certificate is made with the openssl CLI per test session and trusted only through the
COVEL_HTTP_CA_BUNDLE setting, so the client's normal verification path is what is tested.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from approvals.http import HttpFailed, HttpRefused, HttpTimeout, _is_public, plugin_http_request
from approvals.selectors import approval_current
from approvals.services import approval_decide

pytestmark = pytest.mark.django_db


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> dict[str, Path]:
    if not shutil.which("openssl"):
        pytest.fail("the openssl CLI is needed to make the throwaway test certificate")
    folder = tmp_path_factory.mktemp("tls")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=Covel test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        cwd=folder,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        cwd=folder,
    )
    (folder / "ext.cnf").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        "server.pem",
        "-extfile",
        "ext.cnf",
        cwd=folder,
    )
    return {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "server.key"}


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    recorder: Recorder

    def log_message(self, format: str, *args) -> None:  # keep test output quiet
        pass

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.recorder.requests.append(
            {
                "method": self.command,
                "path": parts.path,
                "headers": dict(self.headers.items()),
                "body": body,
            }
        )
        query = parse_qs(parts.query)
        if parts.path == "/redirect":
            self.send_response(int(query.get("code", ["302"])[0]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts.path in ("/dribble", "/dribble-headers"):
            # One byte every 0.5 s: each read is well inside a 1 s socket timeout.
            if parts.path == "/dribble":
                self.send_response(200)
                self.send_header("Content-Length", "20")
                self.end_headers()
                chunks = [b"x"] * 20
            else:
                chunks = [bytes([c]) for c in b"HTTP/1.1 200 OK\r\nX-Slow: yes\r\n\r\n"]
            for chunk in chunks:
                try:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.5)
            return
        if parts.path == "/big":
            payload = b"x" * 4096
        else:
            payload = json.dumps(
                {
                    "method": self.command,
                    "path": self.path,
                    "body": body.decode(),
                    "authorization": self.headers.get("Authorization"),
                }
            ).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Test", "one")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


@pytest.fixture(scope="session")
def https_server(tls_files) -> Iterator[tuple[int, Recorder]]:
    recorder = Recorder()
    handler = type("BoundHandler", (Handler,), {"recorder": recorder})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files["cert"], tls_files["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], recorder
    server.shutdown()
    server.server_close()


@pytest.fixture
def server(https_server, tls_files, settings, monkeypatch):
    port, recorder = https_server
    recorder.requests.clear()
    settings.COVEL_HTTP_CA_BUNDLE = str(tls_files["ca"])
    settings.COVEL_HTTP_ALLOW_PRIVATE = True  # the test server lives on loopback
    # The loader reads the same switch from the environment (it refuses loopback origins else).
    monkeypatch.setenv("COVEL_HTTP_ALLOW_PRIVATE", "true")
    return port, recorder


@pytest.fixture
def fetcher(server, synced, bob):
    """An approved community package: the entry module may GET/POST https://localhost:<port>;
    runtime fetcher/sync may also GET https://127.0.0.1:<port>."""
    port, _ = server
    package = synced(
        "fetcher",
        manifest={
            "permissions": {
                "http": [{"origin": f"https://localhost:{port}", "methods": ["GET", "POST"]}]
            }
        },
        files={"server/index.js": "export default () => {};\n"},
        runtimes={
            "sync": {
                "function": {},
                "permissions": {"http": [{"origin": f"https://127.0.0.1:{port}"}]},
            }
        },
    )
    approval_decide(
        request_id=approval_current(package_key="fetcher").pk, decision="allow", actor=bob
    )
    return package


def fetch(
    url: str,
    *,
    method: str = "GET",
    runtime: str | None = None,
    headers=None,
    body=None,
    package="fetcher",
):
    return plugin_http_request(
        package=package,
        runtime=runtime,
        method=method,
        url=url,
        headers=headers or {},
        body=body,
        timeout=5,
    )


def test_it_lets_an_approved_get_and_post_through(fetcher, server):
    port, recorder = server
    response = fetch(f"https://localhost:{port}/hello?x=1")
    assert response["status"] == 200
    assert response["headers"]["x-test"] == "one"
    assert json.loads(response["body"]) == {
        "method": "GET",
        "path": "/hello?x=1",
        "body": "",
        "authorization": None,
    }
    posted = fetch(
        f"https://localhost:{port}/items",
        method="post",
        body=b'{"a": 1}',
        headers={"Content-Type": "application/json", "Host": "forged.example"},
    )
    assert posted["status"] == 201 and json.loads(posted["body"])["body"] == '{"a": 1}'
    assert recorder.requests[-1]["headers"]["Host"] == f"localhost:{port}"


def test_it_refuses_an_unapproved_origin_naming_runtime_method_and_origin(fetcher, server):
    port, recorder = server
    with pytest.raises(HttpRefused) as refused:
        fetch(f"https://127.0.0.1:{port}/hello")  # the entry module has no grant for it
    message = str(refused.value)
    assert f"GET https://127.0.0.1:{port}" in message and "entry module of fetcher" in message
    assert "permissions.http" in message
    with pytest.raises(HttpRefused) as refused:
        fetch(f"https://localhost:{port}/x", method="DELETE", runtime="sync")
    assert "runtime fetcher/sync" in str(
        refused.value
    ) and f"DELETE https://localhost:{port}" in str(refused.value)
    assert "permissions.http" in str(refused.value)
    assert recorder.requests == []


def test_a_runtime_uses_its_own_grants_and_the_package_ones(fetcher, server):
    port, _ = server
    assert fetch(f"https://127.0.0.1:{port}/r", runtime="sync")["status"] == 200
    assert fetch(f"https://127.0.0.1:{port}/r", runtime="fetcher/sync")["status"] == 200
    assert fetch(f"https://localhost:{port}/p", runtime="sync")["status"] == 200
    with pytest.raises(HttpRefused):
        fetch(f"https://127.0.0.1:{port}/r", runtime="other")


def test_it_refuses_plain_http_and_credentials_in_the_url(fetcher, server):
    port, recorder = server
    with pytest.raises(HttpRefused, match="only https://"):
        fetch(f"http://localhost:{port}/hello")
    with pytest.raises(HttpRefused, match="credentials in the URL"):
        fetch(f"https://user:secret@localhost:{port}/hello")
    with pytest.raises(HttpRefused, match="credentials in the URL") as refused:
        fetch(f"https://token@localhost:{port}/hello")
    assert "secret" not in str(refused.value)
    with pytest.raises(HttpRefused, match="method must be one of"):
        fetch(f"https://localhost:{port}/hello", method="TRACE")
    assert recorder.requests == []


def test_redirects_are_followed_only_within_approved_grants(fetcher, server):
    port, recorder = server
    inside = fetch(f"https://localhost:{port}/redirect?to=/landing")
    assert inside["status"] == 200 and json.loads(inside["body"])["path"] == "/landing"
    with pytest.raises(HttpRefused) as refused:
        fetch(f"https://localhost:{port}/redirect?to=https://127.0.0.1:{port}/landing")
    assert "redirect" in str(refused.value) and f"https://127.0.0.1:{port}" in str(refused.value)
    with pytest.raises(HttpRefused, match="only https://"):
        fetch(f"https://localhost:{port}/redirect?to=http://localhost:{port}/landing")
    assert [r["path"] for r in recorder.requests] == [
        "/redirect",
        "/landing",
        "/redirect",
        "/redirect",
    ]


def test_a_redirect_to_another_granted_origin_drops_credentials(fetcher, server):
    port, _ = server
    response = fetch(
        f"https://localhost:{port}/redirect?to=https://127.0.0.1:{port}/landing",
        runtime="sync",
        headers={"Authorization": "Bearer secret"},
    )
    assert json.loads(response["body"]) == {
        "method": "GET",
        "path": "/landing",
        "body": "",
        "authorization": None,
    }


def test_a_303_after_post_becomes_a_get(fetcher, server):
    port, _ = server
    response = fetch(
        f"https://localhost:{port}/redirect?code=303&to=/done", method="POST", body=b"data"
    )
    assert json.loads(response["body"])["method"] == "GET"


def test_private_addresses_are_refused_unless_the_setting_allows_them(fetcher, server, settings):
    port, recorder = server
    settings.COVEL_HTTP_ALLOW_PRIVATE = False
    with pytest.raises(HttpRefused, match="private, loopback or link-local") as refused:
        fetch(f"https://localhost:{port}/hello")  # a name: its resolved addresses are checked
    assert "127.0.0.1" in str(refused.value) or "::1" in str(refused.value)
    with pytest.raises(HttpRefused, match="private, loopback or link-local"):
        fetch(f"https://127.0.0.1:{port}/hello", runtime="sync")
    assert recorder.requests == []


@pytest.mark.parametrize(
    "host", ["[::127.0.0.1]", "[::ffff:0:7f00:1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"]
)
def test_an_ipv6_address_carrying_loopback_is_refused(server, synced, bob, settings, host):
    """The review's request: an approved grant for https://[::127.0.0.1]:<port> sent nothing."""
    port, recorder = server
    synced(
        "embedded",
        manifest={"permissions": {"http": [{"origin": f"https://{host}:{port}"}]}},
        files={"server/index.js": "export default () => {};\n"},
    )
    approval_decide(
        request_id=approval_current(package_key="embedded").pk, decision="allow", actor=bob
    )
    settings.COVEL_HTTP_ALLOW_PRIVATE = False
    with pytest.raises(HttpRefused, match="private, loopback or link-local"):
        fetch(f"https://{host}:{port}/hello", package="embedded")
    assert recorder.requests == []


def test_every_resolved_address_is_checked(fetcher, server, settings, monkeypatch):
    port, recorder = server
    settings.COVEL_HTTP_ALLOW_PRIVATE = False

    def fake_getaddrinfo(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(HttpRefused, match="10.0.0.7"):
        fetch(f"https://localhost:{port}/hello")
    assert recorder.requests == []


@pytest.mark.parametrize(
    "address, public",
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),
        ("::127.0.0.1", False),
        ("::ffff:0:7f00:1", False),
        ("64:ff9b::7f00:1", False),
        ("2002:7f00:1::", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("93.184.216.34", True),
        ("2606:4700::1111", True),
    ],
)
def test_address_classes(address, public):
    assert _is_public(address) is public


def test_an_unapproved_or_revoked_package_reaches_nothing(server, synced, bob):
    port, recorder = server
    synced("waiting", manifest={"permissions": {"http": [{"origin": f"https://localhost:{port}"}]}})
    with pytest.raises(HttpRefused, match="waits for a staff member"):
        fetch(f"https://localhost:{port}/hello", package="waiting")
    request = approval_current(package_key="waiting")
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    assert fetch(f"https://localhost:{port}/hello", package="waiting")["status"] == 200
    approval_decide(request_id=request.pk, decision="revoke", actor=bob)
    with pytest.raises(HttpRefused, match="revoked"):
        fetch(f"https://localhost:{port}/hello", package="waiting")
    with pytest.raises(HttpRefused, match="not installed"):
        fetch(f"https://localhost:{port}/hello", package="ghost")
    assert len(recorder.requests) == 1


def test_a_bundled_package_is_limited_to_what_it_declares(server, packages):
    port, _ = server
    packages.write(
        "dice",
        trust="bundled",
        files={"server/index.js": "x"},
        manifest={
            "permissions": {"http": [{"origin": f"https://localhost:{port}", "methods": ["HEAD"]}]}
        },
    )
    assert fetch(f"https://localhost:{port}/h", method="HEAD", package="dice")["status"] == 200
    with pytest.raises(HttpRefused, match="permissions.http"):
        fetch(f"https://localhost:{port}/h", method="GET", package="dice")


def test_the_certificate_must_verify(fetcher, server, settings):
    port, recorder = server
    settings.COVEL_HTTP_CA_BUNDLE = None  # only the system store: the throwaway CA is unknown
    with pytest.raises(HttpFailed, match="TLS|certificate"):
        fetch(f"https://localhost:{port}/hello")


def test_large_responses_are_cut_off(fetcher, server, settings):
    port, _ = server
    settings.COVEL_HTTP_MAX_RESPONSE_BYTES = 1000
    with pytest.raises(HttpFailed, match="larger than 1000 bytes"):
        fetch(f"https://localhost:{port}/big")


def test_header_injection_is_refused(fetcher, server):
    port, recorder = server
    with pytest.raises(HttpRefused, match="line break"):
        fetch(f"https://localhost:{port}/hello", headers={"X-A": "1\r\nX-Injected: 2"})
    assert recorder.requests == []


@pytest.mark.parametrize("path", ["/dribble", "/dribble-headers"])
def test_the_timeout_is_a_deadline_for_the_whole_exchange(fetcher, server, path):
    """A server that sends a byte every 0.5 s never trips a per-read 1 s timeout; the deadline
    still ends the call at about 1 s, with its own code."""
    port, _ = server
    started = time.monotonic()
    with pytest.raises(HttpTimeout, match="deadline of 1 s") as caught:
        plugin_http_request(
            package="fetcher",
            runtime=None,
            method="GET",
            url=f"https://localhost:{port}{path}",
            headers={},
            body=None,
            timeout=1,
        )
    elapsed = time.monotonic() - started
    assert caught.value.code == "http_timeout"
    assert 0.9 <= elapsed < 1.6, elapsed


def test_a_timeout_reaches_plugin_code_as_http_timeout(fetcher, server):
    from pluginhost.callbacks import approved_http_request
    from pluginhost.errors import CallbackRefused

    port, _ = server
    with pytest.raises(CallbackRefused) as caught:
        approved_http_request(
            package="fetcher",
            runtime=None,
            method="GET",
            url=f"https://localhost:{port}/dribble",
            headers={},
            body=None,
            timeout=1,
        )
    assert caught.value.code == "http_timeout"
