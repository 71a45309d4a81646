"""Contract resolution: from the plugins a session requests to the set that is active.

Plain Python over the loader's Manifest values; deterministic, and iterated to a fixed point.
Every package considered gets outcomes with a code and a sentence. See docs/sessions.md for the
rules, including the choices where the issue is silent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from catalogue.manifest.hostrange import RangeError, satisfies
from catalogue.manifest.types import Manifest

# Why a package is in.
REQUESTED = "requested"
CORE = "core"
DEPENDENCY = "dependency"
# Why a package is out.
UNKNOWN_PLUGIN = "unknown-plugin"
EXCLUDED = "excluded"
APPROVAL_REQUIRED = "approval-required"
HOST_RANGE = "host-range"
MISSING_PROVIDER = "missing-provider"
AMBIGUOUS_PROVIDER = "ambiguous-provider"
DEFAULT_REPLACED = "default-replaced"
CONFLICT = "conflict"
OUT_CODES = (
    UNKNOWN_PLUGIN,
    EXCLUDED,
    APPROVAL_REQUIRED,
    HOST_RANGE,
    MISSING_PROVIDER,
    AMBIGUOUS_PROVIDER,
    DEFAULT_REPLACED,
    CONFLICT,
)

Usable = Callable[[Manifest], tuple[bool, str | None]]


@dataclass(frozen=True)
class Outcome:
    package: str
    code: str
    message: str
    active: bool
    contract: str | None = None
    other: str | None = None  # the package that caused it: the provider, the winner, the requirer

    def as_dict(self) -> dict[str, object]:
        return {
            "package": self.package,
            "code": self.code,
            "message": self.message,
            "active": self.active,
            "contract": self.contract,
            "other": self.other,
        }


@dataclass(frozen=True)
class Resolution:
    """active: package IDs in a stable order (sorted by ID).

    outcomes: for every package considered, its outcomes in the order they happened; the last
    one is the verdict. providers: each contract with an active provider -> those providers.
    """

    active: tuple[str, ...]
    outcomes: Mapping[str, tuple[Outcome, ...]]
    providers: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def verdict(self, package: str) -> Outcome | None:
        found = self.outcomes.get(package)
        return found[-1] if found else None

    def refused(self) -> dict[str, Outcome]:
        return {p: o[-1] for p, o in self.outcomes.items() if not o[-1].active}


def provided_contracts(manifest: Manifest) -> dict[str, bool]:
    """Contract -> default flag, for every contract the package provides."""
    return {p["contract"]: bool(p.get("default", False)) for p in manifest.provides}


def _eligibility(manifest: Manifest, *, usable: Usable, host_version: str) -> Outcome | None:
    covel = manifest.data.get("covel")
    if isinstance(covel, str) and covel.strip():
        try:
            fits = satisfies(host_version, covel)
        except RangeError as exc:
            return Outcome(
                manifest.id,
                HOST_RANGE,
                f"{manifest.id} has a host range Covel Hub cannot read: {exc}",
                False,
            )
        if not fits:
            return Outcome(
                manifest.id,
                HOST_RANGE,
                f"{manifest.id} needs Covel {covel}; this host runs {host_version}",
                False,
            )
    ok, reason = usable(manifest)
    if not ok:
        detail = f": {reason}" if reason else ""
        return Outcome(
            manifest.id, APPROVAL_REQUIRED, f"{manifest.id} is not approved for use{detail}", False
        )
    return None


def resolve(
    *,
    requested: list[str],
    installed: Mapping[str, Manifest],
    usable: Usable,
    host_version: str,
    excluded: set[str] = frozenset(),  # type: ignore[assignment]
) -> Resolution:
    """Resolve the active package set of a session."""
    outcomes: dict[str, list[Outcome]] = {}

    def note(outcome: Outcome) -> None:
        history = outcomes.setdefault(outcome.package, [])
        if not history or history[-1] != outcome:
            history.append(outcome)

    # Explicit requests first, in their order (duplicates ignored), then core packages by ID.
    order: list[str] = []
    for pid in requested:
        if pid not in order:
            order.append(pid)
    request_rank = {pid: i for i, pid in enumerate(order)}
    cores = sorted(
        pid for pid, m in installed.items() if m.kind == "core" and pid not in request_rank
    )

    eligibility: dict[str, Outcome | None] = {}

    def blocked(pid: str) -> Outcome | None:
        """Why pid can never be active in this session (None when it can)."""
        if pid not in installed:
            return Outcome(pid, UNKNOWN_PLUGIN, f"{pid} is not installed on this hub", False)
        if pid in excluded:
            return Outcome(pid, EXCLUDED, f"{pid} was left out of this session", False)
        if pid not in eligibility:
            eligibility[pid] = _eligibility(
                installed[pid], usable=usable, host_version=host_version
            )
        return eligibility[pid]

    roots: list[str] = []
    for pid in order:
        reason = blocked(pid)
        if reason:
            note(reason)
        else:
            roots.append(pid)
    for pid in cores:
        reason = blocked(pid)
        if reason:
            note(reason)
        else:
            roots.append(pid)

    def rank(pid: str) -> tuple[int, int, str]:
        """Lower wins a conflict: explicit requests (in request order), then core, then dependencies."""
        if pid in request_rank:
            return (0, request_rank[pid], pid)
        if installed[pid].kind == "core":
            return (1, 0, pid)
        return (2, 0, pid)

    providers_of: dict[str, list[str]] = {}
    for pid in sorted(installed):
        for contract in provided_contracts(installed[pid]):
            providers_of.setdefault(contract, []).append(pid)

    dropped: dict[str, Outcome] = {}  # monotone: conflict, missing-provider, ambiguous-provider
    aside: dict[str, Outcome] = {}  # default providers that stepped aside
    restored: set[str] = set()  # defaults brought back once; they do not step aside again

    def closure() -> tuple[dict[str, Outcome], list[Outcome]]:
        """Active set from the roots (with why each is in), and the requirers that cannot be met."""
        active: dict[str, Outcome] = {}
        for pid in roots:
            if pid in dropped or pid in aside:
                continue
            code = REQUESTED if pid in request_rank else CORE
            text = f"{pid} was requested" if code == REQUESTED else f"{pid} is a core package"
            active[pid] = Outcome(pid, code, text, True)
        failures: list[Outcome] = []
        queue = list(active)
        while queue:
            pid = queue.pop(0)
            if pid not in active:
                continue
            for contract in installed[pid].requires:
                if any(contract in provided_contracts(installed[p]) for p in active):
                    continue
                candidates: list[str] = []
                refused: list[str] = []
                for provider in providers_of.get(contract, []):
                    if provider == pid:
                        continue
                    why = blocked(provider) or dropped.get(provider) or aside.get(provider)
                    if why:
                        if provider not in dropped and provider not in aside:
                            note(why)
                        refused.append(f"{provider}: {why.code}")
                    else:
                        candidates.append(provider)
                plain = [p for p in candidates if not provided_contracts(installed[p])[contract]]
                defaults = [p for p in candidates if provided_contracts(installed[p])[contract]]
                chosen: str | None = None
                if len(plain) == 1:
                    chosen = plain[0]
                elif len(defaults) == 1:
                    chosen = defaults[0]
                elif candidates:
                    names = ", ".join(plain or defaults)
                    failures.append(
                        Outcome(
                            pid,
                            AMBIGUOUS_PROVIDER,
                            f"{pid} requires {contract}, which several packages provide ({names}) and none "
                            "by default; request the one you want",
                            False,
                            contract=contract,
                        )
                    )
                    continue
                if chosen is None:
                    tail = f" (installed but unavailable: {'; '.join(refused)})" if refused else ""
                    tail += _other_majors(contract, providers_of)
                    failures.append(
                        Outcome(
                            pid,
                            MISSING_PROVIDER,
                            f"{pid} requires {contract}, and no usable package provides it{tail}",
                            False,
                            contract=contract,
                        )
                    )
                    continue
                active[chosen] = Outcome(
                    chosen,
                    DEPENDENCY,
                    f"{chosen} provides {contract}, which {pid} requires",
                    True,
                    contract=contract,
                    other=pid,
                )
                queue.append(chosen)
        return active, failures

    # Each pass either drops, sets aside or restores a package, so it ends within 3n+1 passes.
    for _ in range(3 * len(installed) + 2):
        active, failures = closure()
        if failures:
            for failure in failures:
                dropped.setdefault(failure.package, failure)
            continue
        changed = False
        for pid in sorted(active):
            if pid in restored:
                continue
            for contract, is_default in provided_contracts(installed[pid]).items():
                if not is_default:
                    continue
                others = [
                    p
                    for p in sorted(active)
                    if p != pid and provided_contracts(installed[p]).get(contract) is False
                ]
                if others:
                    aside[pid] = Outcome(
                        pid,
                        DEFAULT_REPLACED,
                        f"{pid} is the default provider of {contract} and steps aside for {others[0]}",
                        False,
                        contract=contract,
                        other=others[0],
                    )
                    changed = True
                    break
        if changed:
            continue
        clash = _first_conflict(active, installed, rank)
        if clash is not None:
            loser, winner, contract = clash
            dropped[loser] = Outcome(
                loser,
                CONFLICT,
                f"{loser} cannot be active together with {winner} (conflict over {contract}); {winner} "
                + (
                    "was requested explicitly"
                    if winner in request_rank and loser not in request_rank
                    else "wins"
                ),
                False,
                contract=contract,
                other=winner,
            )
            continue
        for pid, outcome in sorted(aside.items()):
            contract = outcome.contract or ""
            if not any(provided_contracts(installed[p]).get(contract) is False for p in active):
                del aside[pid]
                restored.add(pid)
                changed = True
        if changed:
            continue
        break
    else:  # pragma: no cover - the bound above is never reached
        raise RuntimeError("contract resolution did not settle")

    for pid in sorted(active):
        note(active[pid])
    for pid, outcome in sorted({**aside, **dropped}.items()):
        if pid not in active:
            note(outcome)
    providers: dict[str, tuple[str, ...]] = {}
    for pid in sorted(active):
        for contract in provided_contracts(installed[pid]):
            providers[contract] = (*providers.get(contract, ()), pid)
    return Resolution(
        active=tuple(sorted(active)),
        outcomes=MappingProxyType({p: tuple(o) for p, o in outcomes.items()}),
        providers=MappingProxyType(providers),
    )


def _first_conflict(
    active: Mapping[str, Outcome],
    installed: Mapping[str, Manifest],
    rank: Callable[[str], tuple[int, int, str]],
) -> tuple[str, str, str] | None:
    """(loser, winner, contract) of the conflict between the best-ranked pair, or None."""
    pairs: list[tuple[tuple[int, int, str], tuple[int, int, str], str, str, str]] = []
    ids = sorted(active)
    for a in ids:
        for contract in installed[a].conflicts:
            for b in ids:
                if b != a and contract in provided_contracts(installed[b]):
                    winner, loser = sorted((a, b), key=rank)
                    pairs.append((rank(winner), rank(loser), loser, winner, contract))
    if not pairs:
        return None
    pairs.sort()
    _, _, loser, winner, contract = pairs[0]
    return loser, winner, contract


def _other_majors(contract: str, providers_of: Mapping[str, list[str]]) -> str:
    """Installed providers of another major of contract: '; installed: narrative-engine@2 (narrator)'.

    Real Covel packages require majors the hub may not bundle (narrative-engine@1 where the
    hub has @2): naming the other major tells the player it is a version gap, not a typo.
    """
    name = contract.rpartition("@")[0]
    others = sorted(c for c in providers_of if c != contract and c.rpartition("@")[0] == name)
    if not name or not others:
        return ""
    listing = "; ".join(f"{c} from {', '.join(providers_of[c])}" for c in others)
    return f"; another major is installed: {listing}, a different contract"
