"""Reads of the jobs app: one job, a session's jobs, the staff dashboard and its timeline."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet, Value
from django.utils import timezone

from jobs.models import JobState, RuntimeJob, SettleWait


def job_get(*, job_id: uuid.UUID | str) -> RuntimeJob | None:
    try:
        key = uuid.UUID(str(job_id))
    except ValueError:
        return None
    return RuntimeJob.objects.select_related("session", "retry_of").filter(job_id=key).first()


def session_get(*, session_id: uuid.UUID) -> Any:
    """The session whose jobs are asked for, or None. Its model comes through the job's own
    relation (RuntimeJob.session): the jobs app sits below sessions and imports none of it."""
    session_model = RuntimeJob._meta.get_field("session").related_model
    return session_model.objects.filter(pk=session_id).first()


def session_can_manage(*, user: Any, session: Any) -> bool:
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff) or session.owner_id == user.pk


def session_jobs(*, session_id: uuid.UUID, state: str | None = None) -> QuerySet[RuntimeJob]:
    jobs = RuntimeJob.objects.filter(session_id=session_id).select_related("retry_of")
    if state:
        jobs = jobs.filter(state=state)
    return jobs.order_by("-id")


@dataclass(frozen=True)
class DashboardFilters:
    state: str | None = None
    plugin: str | None = None
    session: uuid.UUID | None = None

    @classmethod
    def from_query(cls, query: Any) -> DashboardFilters:
        """Filters from the URL; unknown values are ignored rather than erroring."""
        state = query.get("state") or None
        if state not in JobState.values:
            state = None
        plugin = (query.get("plugin") or "").strip()[:100] or None
        try:
            session = uuid.UUID(query.get("session") or "")
        except ValueError:
            session = None
        return cls(state=state, plugin=plugin, session=session)

    def apply(self, jobs: QuerySet[RuntimeJob]) -> QuerySet[RuntimeJob]:
        if self.state:
            jobs = jobs.filter(state=self.state)
        if self.plugin:
            jobs = jobs.filter(plugin_id=self.plugin)
        if self.session:
            jobs = jobs.filter(session_id=self.session)
        return jobs


# The largest value of the BigAutoField id: a cursor past it would overflow the query parameter.
MAX_JOB_ID = 2**63 - 1
_CURSOR = re.compile(r"[0-9]{1,19}")


def dashboard_cursor(value: str | None) -> int | None:
    """A paging cursor (`before` / `after`) from the URL: a plain non-negative integer id.

    Anything else (text, a sign, a decimal point, non-ASCII digits, a number past the largest
    id) is None, so the dashboard shows its first page rather than failing.
    """
    if not value or not _CURSOR.fullmatch(value):
        return None
    number = int(value)
    return number if number <= MAX_JOB_ID else None


@dataclass(frozen=True)
class DashboardPage:
    """One page of the dashboard's job list, newest first, and where its neighbours start.

    `first`/`last` are 1-based positions among the matching jobs (0 when the page is empty).
    `older_before` is the `before` cursor of the next older page (None: no older jobs).
    `newer_after` is the `after` cursor of the next newer page; with `has_newer` and no cursor
    the newer page is the first page.
    """

    first: int
    last: int
    older_before: int | None
    has_newer: bool
    newer_after: int | None


def job_dashboard(
    *,
    filters: DashboardFilters,
    before: int | None = None,
    after: int | None = None,
    limit: int = 100,
) -> dict[str, Any]:
    """Everything the staff dashboard shows, in a fixed number of queries on every page.

    The list is paged by keyset on the integer id, never by OFFSET: `before` shows the `limit`
    newest matching jobs with a smaller id, `after` the `limit` oldest with a larger one (still
    shown newest first), neither: the newest jobs. `before` wins when both are given. The state
    counts query also counts the matching jobs above the cursor, which gives the page's position
    and whether newer jobs exist without another query.
    """
    if before is not None:
        after = None
    matching = filters.apply(RuntimeJob.objects.all())
    if before is not None:
        rows = list(matching.filter(id__lt=before).order_by("-id")[: limit + 1])
        has_more = len(rows) > limit
        jobs = rows[:limit]
    elif after is not None:
        rows = list(matching.filter(id__gt=after).order_by("id")[: limit + 1])
        has_more = len(rows) > limit
        jobs = rows[:limit][::-1]
    else:
        rows = list(matching.order_by("-id")[: limit + 1])
        has_more = len(rows) > limit
        jobs = rows[:limit]

    per_state = matching.order_by().values_list("state")
    if before is not None:
        above = Count("id", filter=Q(id__gte=before))
    elif after is not None:
        above = Count("id", filter=Q(id__gt=after))
    else:
        above = Value(0)
    counted = list(
        per_state.annotate(n=Count("id"), above=above).values_list("state", "n", "above")
    )
    counts = {state: n for state, n, _ in counted}
    total = sum(counts.values())
    above_cursor = sum(n for _, _, n in counted)

    if after is not None:
        # `above_cursor` includes this page; older jobs are the matching ones up to the cursor.
        newer = max(0, above_cursor - len(jobs))
        has_older = total - above_cursor > 0
        has_newer = has_more
    else:
        newer = above_cursor
        has_older = has_more
        has_newer = newer > 0
    # The neighbours start next to this page's ends; an empty page (a cursor past every
    # matching job) starts them at its cursor instead.
    older_before = None
    if has_older:
        older_before = jobs[-1].pk if jobs else min((after or 0) + 1, MAX_JOB_ID)
    newer_after = None
    if has_newer and newer > limit:
        # With a page or less of newer jobs the newer link is simply the first page.
        newer_after = jobs[0].pk if jobs else max(0, (before or 0) - 1)

    # The timeline stays a picture of the most recent matching jobs, whichever page is shown.
    recent = list(matching.order_by("-id")[:40])
    plugins = list(
        RuntimeJob.objects.order_by("plugin_id").values_list("plugin_id", flat=True).distinct()
    )
    waits = SettleWait.objects.all()
    if filters.session:
        waits = waits.filter(session_id=filters.session)
    recent_waits = list(waits.order_by("-started_at")[:50])
    return {
        "jobs": jobs,
        "page": DashboardPage(
            first=newer + 1 if jobs else 0,
            last=newer + len(jobs),
            older_before=older_before,
            has_newer=has_newer,
            newer_after=newer_after,
        ),
        "counts": [(state, label, counts.get(state, 0)) for state, label in JobState.choices],
        "total": total,
        "plugins": plugins,
        "timeline": job_timeline(jobs=recent, waits=recent_waits),
    }


# --- The timeline picture ---------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    kind: str  # queue | run | wait | wait-timeout
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class Lane:
    y: float
    label: str
    state: str
    bars: list[Bar]


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    lanes: list[Lane]
    ticks: list[tuple[float, str, str]]
    span_ms: int


LANE_H = 18
LABEL_W = 210
PLOT_W = 640


def _ms(a: datetime, b: datetime) -> float:
    return (b - a).total_seconds() * 1000


def job_timeline(*, jobs: list[RuntimeJob], waits: list[SettleWait]) -> Timeline:
    """Lay out recent jobs (queue time, then run time) and settle waits on one time axis.

    Coordinates are computed here so the template only prints numbers (no plugin text ever
    reaches an SVG attribute unescaped).
    """
    now = timezone.now()
    starts = [j.created_at for j in jobs] + [w.started_at for w in waits]
    if not starts:
        return Timeline(LABEL_W + PLOT_W, LANE_H * 2, [], [], 0)
    origin = min(starts)
    ends = [j.finished_at or now for j in jobs] + [
        w.started_at + timedelta(milliseconds=w.waited_ms) for w in waits
    ]
    span = max(1.0, max(_ms(origin, e) for e in ends))
    scale = PLOT_W / span

    def x(moment: datetime) -> float:
        return round(LABEL_W + _ms(origin, moment) * scale, 2)

    def width(a: datetime, b: datetime) -> float:
        return round(max(1.0, _ms(a, b) * scale), 2)

    lanes: list[Lane] = []
    for job in sorted(jobs, key=lambda j: j.id):
        bars = []
        run_start = job.started_at or job.claimed_at
        queue_end = run_start or job.finished_at or now
        bars.append(
            Bar("queue", x(job.created_at), width(job.created_at, queue_end),
                f"queued {int(_ms(job.created_at, queue_end))} ms")
        )  # fmt: skip
        if job.started_at is not None:
            run_end = job.finished_at or now
            bars.append(
                Bar("run", x(job.started_at), width(job.started_at, run_end),
                    f"ran {int(_ms(job.started_at, run_end))} ms ({job.state})")
            )  # fmt: skip
        # A qualified runtime id already names its plugin: do not print the plugin twice.
        name = job.runtime_id
        if name != job.plugin_id and not name.startswith(f"{job.plugin_id}/"):
            name = f"{job.plugin_id}/{name}"
        label = f"{name} #{job.pk}"
        lanes.append(Lane(len(lanes) * LANE_H, label, job.state, bars))
    for wait in sorted(waits, key=lambda w: w.started_at):
        end = wait.started_at + timedelta(milliseconds=wait.waited_ms)
        kind = "wait-timeout" if wait.timed_out else "wait"
        title = f"settle wait {wait.waited_ms} ms of {wait.limit_ms} ms"
        if wait.timed_out:
            title += f", timed out with {len(wait.pending_job_ids)} pending"
        lanes.append(
            Lane(len(lanes) * LANE_H, "settle wait", kind,
                 [Bar(kind, x(wait.started_at), width(wait.started_at, end), title)])
        )  # fmt: skip
    ticks = []
    for i in range(5):
        offset = span * i / 4
        # The first label starts at its tick and the last ends at it, so none is clipped.
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        ticks.append((round(LABEL_W + offset * scale, 2), f"{int(offset)} ms", anchor))
    return Timeline(LABEL_W + PLOT_W + 10, len(lanes) * LANE_H + 24, lanes, ticks, int(span))
