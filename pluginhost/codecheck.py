"""Does a package's code load? Two checks, for the catalogue's code state.

- `package_code_try_load`: bundled and approved code. The entry module and every handler are
  imported in a fresh Node host (the same `plugin_load` a session uses), with every host
  capability refused, then the host is stopped. Registrations are checked against the manifest
  as in play.
- `package_code_static_check`: community code not approved yet, which must never run. Every
  file the entry and the handlers reach is parsed (never linked or evaluated) and each static
  import resolved by the host's rules (`node/static_check.mjs`).

Both answer a CodeVerdict; neither raises for a package's fault.
"""

from __future__ import annotations

import json
import logging
import subprocess
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


def package_code_static_check(manifest: Manifest) -> CodeVerdict:
    """Parse and resolve every reachable module without running any of it."""
    request = {"root": str(Path(manifest.path).resolve()), "files": package_code_files(manifest)}
    try:
        done = subprocess.run(
            [
                node_binary(),
                "--experimental-vm-modules",
                "--disable-warning=ExperimentalWarning",
                str(STATIC_SCRIPT),
            ],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=STATIC_TIMEOUT,
            env={"PATH": "/usr/bin:/bin", "NODE_OPTIONS": ""},
        )
    except subprocess.TimeoutExpired:
        return CodeVerdict(False, "static_check_timeout", "the static import check took too long")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return CodeVerdict(False, "static_check_failed", f"the static check failed: {tail[0]}")
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


def package_code_check(*, package: Package, manifest: Any = None, host: Any = None) -> Package:
    """Set the package's code state: does its code load?

    Bundled and approved code is imported in a Node host, so `loaded`
    means loaded; community code not approved yet is only parsed, every file the entry and
    the handlers reach (it never runs before staff approve it): `needs-approval` when that
    passes, `code-error` with the message when it does not.
    """
    state, error = Package.CodeState.NONE, ""
    may_run, judged = _code_may_run(package)
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
                    verdict = package_code_static_check(manifest)
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
    package.code_checked = f"{package.content_hash}:{judged}"
    Package.objects.filter(pk=package.pk).update(
        code_state=state, code_error=error, code_checked=package.code_checked
    )
    return package


def package_code_checks(checks: list[tuple[Package, Any]], *, force: bool = False) -> None:
    """The code check of each package the sync indexed (catalogue.callouts.package_code_checks),
    sharing one Node host for the real loads. An unchanged row (no manifest given) whose
    verdict is current for its files and approval state is skipped."""
    host = None
    try:
        for package, manifest in checks:
            if not force and manifest is None and package.code_checked == _code_key(package):
                continue
            if package.trust == Package.Trust.BUNDLED and host is None:
                host = NodeHost(grace=1.0)
            package_code_check(package=package, manifest=manifest, host=host)
    finally:
        if host is not None:
            host.stop()
