"""The HTTP client behind `covel.http`: plugin code reaches only the origins an admin approved.

Rules, in the order they are checked (each request and each redirect hop):
- https only; no user name or password in the URL; a method from the spec's list;
- the (origin, method) pair must be covered by a grant of the package: the entry module
  (runtime None) uses the package-level grants, a runtime uses its own grants plus the
  package-level ones. Community packages use the grants of their approved request; bundled
  packages use what they declare;
- every address the host name resolves to must be public (private, loopback, link-local,
  multicast, reserved and unspecified ones are refused, and an IPv6 address carrying an IPv4
  one counts as that IPv4 address: core/addresses.py) unless COVEL_HTTP_ALLOW_PRIVATE is true;
  the connection goes to the address that was checked, so DNS cannot change it in between.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from typing import Any
from urllib.parse import urljoin, urlsplit

from django.conf import settings

from approvals.permissions import HTTP_METHODS, grant_covers, http_grants, normalise_origin
from core.addresses import is_public_address

MAX_REDIRECTS = 5
MAX_TIMEOUT = 60.0
DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024
# Headers the client sets itself; a plugin may not forge them.
RESERVED_HEADERS = {
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "keep-alive",
}
# Sent to the origin that the plugin addressed, never carried across origins by a redirect.
CREDENTIAL_HEADERS = {"authorization", "cookie", "proxy-authorization"}
REDIRECT_CODES = {301, 302, 303, 307, 308}


class HttpError(Exception):
    """Base of the client's errors; message is safe to show to the plugin; code is stable."""

    code = "http_error"


class HttpRefused(HttpError):
    """The request breaks a rule: nothing was sent (or the redirect was not followed)."""

    code = "http_refused"


class HttpFailed(HttpError):
    """The request was allowed but the network failed (DNS, TLS, timeout, too large a response)."""

    code = "http_failed"


class HttpTimeout(HttpFailed):
    """The whole exchange (DNS, connect, TLS, every read, every redirect) passed its deadline."""

    code = "http_timeout"


def _timed_out(timeout: float) -> HttpTimeout:
    return HttpTimeout(
        f"covel.http timed out: the request did not finish within its deadline of {timeout:g} s"
    )


_DNS_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="covel-dns")


def _who(package: str, runtime: str | None) -> str:
    return f"runtime {runtime}" if runtime else f"the entry module of {package}"


def _refuse_undeclared(
    package: str, runtime: str | None, method: str, origin: str, why: str
) -> HttpRefused:
    where = (
        f"permissions.http of runtime {runtime}"
        if runtime
        else f"permissions.http of {package}'s PLUGIN.md"
    )
    return HttpRefused(
        f"covel.http refused {method} {origin} for {_who(package, runtime)}: {why}. "
        f"Declare the origin and method under permissions.http ({where}) and have an admin approve it."
    )


def package_http_grants(
    *, package: str, runtime: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The grants the caller may use and the qualified runtime id (None for the entry module).

    Raises HttpRefused when the package or runtime is unknown, or the package is not usable.
    """
    from approvals.selectors import package_usability
    from catalogue.models import Package, Runtime

    row = Package.objects.filter(package_id=package).first()
    if row is None:
        raise HttpRefused(f"covel.http refused: package {package} is not installed")
    if row.trust == Package.Trust.BUNDLED:
        # Trusted code needs no approval: what it declares, as the sync indexed it.
        runtimes = Runtime.objects.filter(package=row).values_list("qualified_id", "data")
        permissions = {"http": http_grants(manifest=row.manifest or {}, runtimes=runtimes)}
    else:
        from approvals.models import PermissionScope
        from approvals.selectors import approval_in_force

        usability = package_usability(package_id=package)
        # While a newer version waits for staff, sessions run the last approval that stands,
        # with that approval's grants (never the waiting version's).
        in_force = None if usability.usable else approval_in_force(package_key=package)
        if not usability.usable and in_force is None:
            raise HttpRefused(
                f"covel.http refused for {_who(package, runtime)}: {usability.reason}"
            )
        scope = (
            PermissionScope.objects.select_related("request").filter(package_key=package).first()
        )
        if in_force is not None:
            permissions = in_force.permissions
        elif scope is None or scope.request is None:
            permissions = {"code": [], "http": []}  # asks for nothing, so it may reach nothing
        else:
            permissions = scope.request.permissions
    # Runtimes are named "<package>/<runtime>" in grants; the inline runtime by the package ID.
    qualified = None
    if runtime:
        qualified = runtime if "/" in runtime or runtime == package else f"{package}/{runtime}"
    return list(permissions.get("http", [])), qualified


def _check_url(
    *,
    url: str,
    method: str,
    package: str,
    runtime: str | None,
    grants: list[dict[str, Any]],
    hop: int = 0,
) -> tuple[str, str, int, str]:
    """(origin, host, port, path-with-query) of an allowed URL, or HttpRefused."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise HttpRefused(
            f"covel.http refused {method} {url!r} for {_who(package, runtime)}: not a valid URL ({exc})"
        ) from None
    scheme = parts.scheme.lower()
    if scheme != "https":
        raise HttpRefused(
            f"covel.http refused {method} {url} for {_who(package, runtime)}: only https:// URLs are allowed"
        )
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        origin = normalise_origin(f"https://{parts.hostname or ''}" + (f":{port}" if port else ""))
        raise HttpRefused(
            f"covel.http refused {method} {origin} for {_who(package, runtime)}: "
            "credentials in the URL are not allowed; send them in a header"
        )
    host = parts.hostname
    if not host:
        raise HttpRefused(
            f"covel.http refused {method} {url} for {_who(package, runtime)}: the URL has no host"
        )
    origin = normalise_origin(f"https://{parts.netloc}")
    if not grant_covers(grants, runtime=runtime, origin=origin, method=method):
        why = "no approved grant covers this origin and method"
        if hop:
            why = f"a redirect led there and {why}"
        raise _refuse_undeclared(package, runtime, method, origin, why)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return origin, host, port or 443, path


def _is_public(address: str) -> bool:
    # One classification with the loader's origin check: an IPv6 address that carries an IPv4
    # one (::127.0.0.1, 64:ff9b::7f00:1, 2002:7f00:1::, ...) counts as the IPv4 one it carries.
    return is_public_address(address)


def _resolve(
    *,
    host: str,
    port: int,
    method: str,
    origin: str,
    package: str,
    runtime: str | None,
    deadline: float | None = None,
    timeout: float = MAX_TIMEOUT,
) -> list[str]:
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
        addresses = [str(literal)]
    except ValueError:
        # getaddrinfo has no timeout of its own: wait for it only as long as the deadline allows.
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        future = _DNS_POOL.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
        try:
            infos = future.result(timeout=wait)
        except concurrent.futures.TimeoutError:
            raise _timed_out(timeout) from None
        except OSError as exc:
            raise HttpFailed(f"covel.http could not resolve {host}: {exc}") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise HttpFailed(f"covel.http could not resolve {host}")
    if not getattr(settings, "COVEL_HTTP_ALLOW_PRIVATE", False):
        # Every address is checked, not just the first: a name with one private record is refused.
        private = [a for a in addresses if not _is_public(a)]
        if private:
            raise HttpRefused(
                f"covel.http refused {method} {origin} for {_who(package, runtime)}: {host} resolves to "
                f"a private, loopback or link-local address ({', '.join(private)}); plugins may reach only "
                "public addresses"
            )
    return addresses


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to already-checked IP addresses while verifying TLS for the host name."""

    def __init__(
        self, host: str, port: int, *, addresses: list[str], context: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._addresses = addresses
        self._context = context
        self.tcp_socket: socket.socket | None = None

    def connect(self) -> None:
        error: OSError | None = None
        for address in self._addresses:  # e.g. ::1 then 127.0.0.1, as the resolver listed them
            try:
                sock = socket.create_connection((address, self.port), self.timeout)
            except OSError as exc:
                error = exc
                continue
            self.sock = self._context.wrap_socket(
                sock, server_hostname=self.host.strip("[]"), do_handshake_on_connect=False
            )
            # Kept for the deadline (http.client drops self.sock once the response owns it), and
            # set before the handshake, so a server stalling the handshake is cut off too.
            self.tcp_socket = self.sock
            self.sock.do_handshake()
            return
        raise error or OSError(f"no address to connect to for {self.host}")


def _ssl_context() -> ssl.SSLContext:
    # Tests point this at a throwaway CA; production leaves it unset and trusts the system store.
    bundle = getattr(settings, "COVEL_HTTP_CA_BUNDLE", None)
    return ssl.create_default_context(cafile=str(bundle) if bundle else None)


def plugin_http_request(
    *,
    package: str,
    runtime: str | None,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout: float,
    ssl_context: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """Send one request for plugin code; returns {"status", "headers", "body"}.

    headers of the response are lower-cased (repeated ones joined with ", "); body is bytes.
    Raises HttpRefused for a rule broken (nothing sent) and HttpFailed for a network failure.
    """
    method = str(method).upper()
    grants, qualified = package_http_grants(package=package, runtime=runtime)
    if method not in HTTP_METHODS:
        raise HttpRefused(
            f"covel.http refused {method} {url} for {_who(package, runtime)}: method must be one of "
            f"{', '.join(HTTP_METHODS)}"
        )
    send_headers: dict[str, str] = {}
    for name, value in (headers or {}).items():
        name, value = str(name), str(value)
        if any(c in name + value for c in "\r\n\0") or not name.strip():
            raise HttpRefused(
                f"covel.http refused {method} {url} for {_who(package, runtime)}: "
                f"header {name[:40]!r} has an empty name or a line break"
            )
        if name.lower() in RESERVED_HEADERS:
            continue
        send_headers[name] = value
    timeout = max(0.1, min(float(timeout or MAX_TIMEOUT), MAX_TIMEOUT))
    deadline = time.monotonic() + timeout
    limit = int(getattr(settings, "COVEL_HTTP_MAX_RESPONSE_BYTES", DEFAULT_MAX_RESPONSE_BYTES))
    context = ssl_context or _ssl_context()
    first_origin: str | None = None

    for hop in range(MAX_REDIRECTS + 1):
        origin, host, port, path = _check_url(
            url=url, method=method, package=package, runtime=qualified, grants=grants, hop=hop
        )
        if first_origin is None:
            first_origin = origin
        elif origin != first_origin:
            send_headers = {
                k: v for k, v in send_headers.items() if k.lower() not in CREDENTIAL_HEADERS
            }
        addresses = _resolve(
            host=host,
            port=port,
            method=method,
            origin=origin,
            package=package,
            runtime=qualified,
            deadline=deadline,
            timeout=timeout,
        )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _timed_out(timeout)
        status, response_headers, response_body, location = _send(
            host=host,
            port=port,
            addresses=addresses,
            context=context,
            method=method,
            path=path,
            headers=send_headers,
            body=body,
            timeout=remaining,
            limit=limit,
            deadline=deadline,
            total=timeout,
        )
        if status in REDIRECT_CODES and location:
            url = urljoin(url, location)
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = ("GET", None) if method != "HEAD" else ("HEAD", None)
            continue
        return {"status": status, "headers": response_headers, "body": response_body}
    raise HttpRefused(
        f"covel.http refused to follow more than {MAX_REDIRECTS} redirects (last: {url})"
    )


def _send(
    *,
    host: str,
    port: int,
    addresses: list[str],
    context: ssl.SSLContext,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout: float,
    limit: int,
    deadline: float,
    total: float,
) -> tuple[int, dict[str, str], bytes, str | None]:
    connection = _PinnedHTTPSConnection(
        host, port, addresses=addresses, context=context, timeout=timeout
    )
    # A socket timeout bounds each read, not the exchange: a server sending one byte just
    # inside it would hold the call for ever. At the deadline this timer cuts the connection,
    # so every blocked connect, handshake or read returns at once.
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        sock = connection.tcp_socket
        if sock is not None:
            try:
                # The plain socket's shutdown: it ends a read blocked in another thread, TLS or not.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), cut)
    timer.daemon = True
    timer.start()
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read(limit + 1)
        if expired.is_set():  # a cut connection reads as an early end: never a short success
            raise _timed_out(total)
        if len(data) > limit:
            raise HttpFailed(f"covel.http refused a response larger than {limit} bytes")
        merged: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        return response.status, merged, data, response.getheader("Location")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set() or time.monotonic() >= deadline:
            raise _timed_out(total) from None
        if isinstance(exc, ssl.SSLError | ssl.CertificateError):
            raise HttpFailed(f"covel.http TLS failure with {host}: {exc}") from None
        if isinstance(exc, ValueError):
            raise
        raise HttpFailed(f"covel.http request to {host} failed: {exc}") from None
    finally:
        timer.cancel()
        connection.close()
