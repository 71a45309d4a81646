"""Does a package's code load? Two checks, for the catalogue's code state.

- `package_code_try_load`: bundled and approved code. The entry module and every handler are
  imported in a fresh Node host (the same `plugin_load` a session uses), with every host
  capability refused, then the host is stopped. Registrations are checked against the manifest
  as in play.
- `package_code_static_check`: community code not approved yet, which must never run. Every
  file the entry and the handlers reach is parsed (never linked or evaluated) and each static
  import resolved by the host's rules (`node/static_check.mjs`). A sync checks all its
  packages in one Node process (`StaticChecker`), each with its own deadline.

Both answer a CodeVerdict; neither raises for a package's fault.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest
from catalogue.models import Package
from pluginhost.callbacks import RefusingCallbacks
from pluginhost.errors import PluginHostError
from pluginhost.host import NodeHost, node_binary
from pluginhost.pool import folder_trust, host_for
from pluginhost.services import load_request, plugin_load

log = logging.getLogger(__name__)

STATIC_SCRIPT = Path(__file__).parent / "node" / "static_check.mjs"
STATIC_TIMEOUT = 30.0
# Packages one checker process parses before it is replaced: Node's time per package grew with
# the number it had parsed (5 times from 1,000 to 4,000 in one process), a new process costs
# about 50 ms.
RECYCLE_AFTER = 500


@dataclass(frozen=True)
class CodeVerdict:
    ok: bool
    code: str = ""  # the host's error code when not ok (module_not_found, plugin_import_refused…)
    message: str = ""


def package_code_files(manifest: Manifest) -> list[str]:
    """Package-relative files the host imports: the entry, then each handler and guard."""
    # Only names are read: the folder itself, never the approved copy (which unapproved
    # code does not have).
    request = load_request(manifest, root=str(Path(manifest.path).resolve()))
    files = [request["entry"]] if request["entry"] else []
    for runtime in request["runtimes"]:
        files += [f for f in (runtime["handler"], runtime["guard"]) if f]
    return [f.removeprefix("./") for f in files]


def package_has_code(manifest: Manifest) -> bool:
    return bool(package_code_files(manifest))


def package_code_try_load(manifest: Manifest, *, host: NodeHost | None = None) -> CodeVerdict:
    """Import the package's code for real (only for bundled or approved code). Community code
    is imported in its own contained host (pluginhost.pool), never the shared one."""
    if folder_trust(manifest.path) == "community":
        host = host_for(manifest)
        own = False
    else:
        own = host is None
        host = host or NodeHost(grace=1.0)
    try:
        plugin_load(manifest=manifest, host=host, callbacks=RefusingCallbacks(), force=True)
    except PluginHostError as exc:
        return CodeVerdict(False, exc.code, exc.message)
    finally:
        if own:
            host.stop()
        else:
            host.forget(manifest.id)
    return CodeVerdict(True)


def package_code_static_check(
    manifest: Manifest, *, checker: StaticChecker | None = None
) -> CodeVerdict:
    """Parse and resolve every reachable module without running any of it. A sync passes one
    checker for all its packages; alone, the check starts (and stops) a checker of its own."""
    if checker is not None:
        return checker.check(manifest)
    with StaticChecker() as own:
        return own.check(manifest)


class StaticChecker:
    """One Node process (node/static_check.mjs) that parses package after package: the
    process start is paid once per sync, not once per package.

    Each package's answer is awaited with its own deadline. A package that hangs the checker
    (it runs none of the package's code, but a file could be made to stall a read) or kills it
    gets the verdict the single check gave it (static_check_timeout / static_check_failed),
    and the next package gets a fresh process, so no package's files decide another's verdict.
    """

    def __init__(self, *, timeout: float = STATIC_TIMEOUT) -> None:
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buffer = b""
        self._answered = 0  # by the current process

    def __enter__(self) -> StaticChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            # stderr goes to a file: a chatty package (a warning per file) cannot fill a pipe
            # nobody reads, and its last line explains a crash.
            self._stderr = tempfile.TemporaryFile()
            self._process = subprocess.Popen(
                [
                    node_binary(),
                    "--experimental-vm-modules",
                    "--disable-warning=ExperimentalWarning",
                    str(STATIC_SCRIPT),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env={"PATH": "/usr/bin:/bin", "NODE_OPTIONS": ""},
            )
            self._buffer = b""
            self._answered = 0
        return self._process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                process.stdin.close()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
            process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _kill(self) -> str:
        """Stop a process that failed a package; the last line it wrote on stderr."""
        process, self._process = self._process, None
        tail = "no output"
        if process is not None:
            process.kill()
            process.wait()
            process.stdout.close()
            try:
                process.stdin.close()
            except OSError:
                pass
        if self._stderr is not None:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            tail = lines[-1] if lines else tail
            self._stderr.close()
            self._stderr = None
        return tail

    def _answer_line(self, process: subprocess.Popen[bytes]) -> bytes | None:
        """One line of stdout within the deadline; None on timeout, b"" when the process died."""
        deadline = time.monotonic() + self.timeout
        fd = process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def check(self, manifest: Manifest) -> CodeVerdict:
        request = {
            "root": str(Path(manifest.path).resolve()),
            "files": package_code_files(manifest),
        }
        if self._answered >= RECYCLE_AFTER:
            self.close()  # a fresh process: each package's check keeps no state in the old one
        process = self._start()
        self._answered += 1
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            return CodeVerdict(
                False, "static_check_failed", f"the static check failed: {self._kill()}"
            )
        line = self._answer_line(process)
        if line is None:
            self._kill()
            return CodeVerdict(
                False, "static_check_timeout", "the static import check took too long"
            )
        try:
            answer = json.loads(line)
        except ValueError:
            return CodeVerdict(
                False, "static_check_failed", f"the static check failed: {self._kill()}"
            )
        if answer.get("ok"):
            return CodeVerdict(True)
        errors = answer.get("errors") or []
        first = errors[0] if errors else {}
        message = "; ".join(str(e.get("message", "")) for e in errors[:5])
        return CodeVerdict(False, str(first.get("code", "static_check_failed")), message)


# ------------------------------------------------------------------ the package's code state


def _code_may_run(package: Package) -> tuple[bool, str]:
    """(may its code run, the approval state it was judged under)."""
    if package.trust == Package.Trust.BUNDLED:
        return True, "bundled"
    from approvals.selectors import package_usability

    usability = package_usability(package_id=package.package_id)
    return usability.usable, usability.state


def _code_key(package: Package) -> str:
    return f"{package.content_hash}:{_code_may_run(package)[1]}"


def package_code_check(
    *,
    package: Package,
    manifest: Any = None,
    host: Any = None,
    checker: Any = None,
    judged: tuple[bool, str] | None = None,
    save: bool = True,
) -> Package:
    """Set the package's code state: does its code load?

    Bundled and approved code is imported in a Node host, so `loaded`
    means loaded; community code not approved yet is only parsed, every file the entry and
    the handlers reach (it never runs before staff approve it): `needs-approval` when that
    passes, `code-error` with the message when it does not. judged: (may its code run, the
    approval state) when the caller learnt them in bulk; save=False leaves the row's update
    to the caller (a sync writes them in bulk).
    """
    state, error = Package.CodeState.NONE, ""
    may_run, judged_as = judged or _code_may_run(package)
    if package.state == Package.State.LOADED:
        if manifest is None:
            manifest = load_package(
                Path(package.source_dir),
                host_version=package.host_version or settings.COVEL_HOST_VERSION,
            ).manifest
        try:
            if manifest is not None and package_code_files(manifest):
                if may_run:
                    verdict = package_code_try_load(manifest, host=host)
                    state = Package.CodeState.LOADED if verdict.ok else Package.CodeState.CODE_ERROR
                else:
                    verdict = package_code_static_check(manifest, checker=checker)
                    state = (
                        Package.CodeState.NEEDS_APPROVAL
                        if verdict.ok
                        else Package.CodeState.CODE_ERROR
                    )
                if not verdict.ok:
                    error = f"{verdict.message} [{verdict.code}]"
        except Exception as exc:  # the check must never stop a sync
            log.exception("the code check failed on %s", package.package_id)
            state, error = Package.CodeState.CODE_ERROR, f"the code check failed: {exc}"
    package.code_state, package.code_error = state, error
    package.code_checked = f"{package.content_hash}:{judged_as}"
    if save:
        Package.objects.filter(pk=package.pk).update(
            code_state=state, code_error=error, code_checked=package.code_checked
        )
    return package


def _judged_in_bulk(packages: list[Package]) -> dict[int, tuple[bool, str]]:
    """pk -> (may its code run, the approval state it is judged under), in one query per
    2,000 packages (a sync of 10,000 packages must not ask once per package)."""
    from approvals.selectors import packages_usability

    community = [p.package_id for p in packages if p.trust != Package.Trust.BUNDLED]
    rows = {p.package_id: p for p in packages}  # read already: not read again for the verdict
    usability = {}
    for start in range(0, len(community), 2000):  # a bounded IN list on any database
        usability.update(
            packages_usability(package_ids=community[start : start + 2000], packages=rows)
        )
    judged = {}
    for p in packages:
        if p.trust == Package.Trust.BUNDLED:
            judged[p.pk] = (True, "bundled")
        else:
            judged[p.pk] = (usability[p.package_id].usable, usability[p.package_id].state)
    return judged


def package_code_checks(checks: list[tuple[Package, Any]], *, force: bool = False) -> None:
    """The code check of each package the sync indexed (catalogue.callouts.package_code_checks),
    sharing one Node host for the real loads and one static checker for the parses, the
    approval states read and the verdicts written in bulk. An unchanged row (no manifest
    given) whose verdict is current for its files and approval state is skipped."""
    host = None
    judged = _judged_in_bulk([p for p, _ in checks])
    checked: list[Package] = []
    with StaticChecker() as checker:  # its process starts with the first community package
        try:
            for package, manifest in checks:
                if (
                    not force
                    and manifest is None
                    and package.code_checked == f"{package.content_hash}:{judged[package.pk][1]}"
                ):
                    continue
                if package.trust == Package.Trust.BUNDLED and host is None:
                    host = NodeHost(grace=1.0)
                checked.append(
                    package_code_check(
                        package=package,
                        manifest=manifest,
                        host=host,
                        checker=checker,
                        judged=judged[package.pk],
                        save=False,
                    )
                )
        finally:
            if host is not None:
                host.stop()
            Package.objects.bulk_update(
                checked, ["code_state", "code_error", "code_checked"], batch_size=500
            )
