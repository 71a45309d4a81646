"""Catalogue benchmark: index 1,000 generated community packages, re-sync unchanged, with 1
and with 10 changed, beside the floor of reading the same files (wall and CPU time, and the
peak RSS of the process), then time GET /api/packages?q=... by query kind and the list and
detail pages over them (p50/p95, with their query counts).

Run from the checkout:  .venv/bin/python bench/catalogue.py [--count 1000] [--requests 300]
It uses a throw-away SQLite database and plugin folder in a temp directory (DATABASE_URL is
honoured when set, to measure PostgreSQL instead; that database is emptied first).

The 100,000-package case, on PostgreSQL (SQLite is measured up to 10,000). It needs about
3 GB of disk for the packages in the temp folder (TMPDIR) and takes about 15 minutes on
one core, most of it the first sync:

    export SECRET_KEY=$(python3 -c "print('x' * 60)")
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<a database you may empty> \
        .venv/bin/python bench/catalogue.py --count 100000 --requests 60

`--seed index` writes the rows without a sync, for the search and page figures alone.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WORDS = [
    "dice",
    "weather",
    "story",
    "quest",
    "satchel",
    "map",
    "music",
    "combat",
    "notes",
    "lore",
    "inventory",
]
STAGES = ["setup", "pre-turn", "narrative", "post-turn", "audit"]


def package_text(n: int, revision: int = 0) -> str:
    word = WORDS[n % len(WORDS)]
    stage = STAGES[n % len(STAGES)]
    runtime = "function: {}" if n % 3 == 0 else "agent:\n    history: { maxTurns: 2 }"
    detached = (
        ", detached: { settle: true, maxSettleWaitMs: 5000 }"
        if stage in ("post-turn", "audit")
        else ""
    )
    return f"""---
version: 1.{revision}.{n % 7}
displayName: {word.title()} helper {n}
description: Keeps track of {word} for the story, revision {revision}. Package number {n}.
tags: [mode:{word}, data:{WORDS[(n + 3) % len(WORDS)]}]
author:
  name: Author {n % 40}
  url: https://author{n % 40}.example.com
  links:
    - {{ label: Community, url: "https://example.com/c/{n}" }}
provides:
  - {{ contract: {word}-engine@{1 + n % 2}, default: {str(n < 10).lower()} }}
requires: [narrative-engine@2]
contributes:
  settings:
    - {{ key: level, type: select, label: Level, default: low, options: [{{ value: low, label: Low }}, {{ value: high, label: High }}] }}
    - {{ key: note, type: text, label: Note }}
  data:
    records{n}:
      schema: ./schemas/record.schema.json
runtime:
  schedule: {{ stage: {stage}{detached} }}
  {runtime}
---
Track {word} facts and keep them short. (revision {revision})
"""


def write_package(root: Path, n: int, revision: int = 0) -> None:
    folder = root / f"pkg-{n:04d}"
    (folder / "schemas").mkdir(parents=True, exist_ok=True)
    (folder / "server").mkdir(exist_ok=True)
    (folder / "schemas" / "record.schema.json").write_text('{"type": "object"}')
    # A little code in every package (the entry module; a handler for function runtimes), so
    # the sync's static import check has something to parse, as in a community directory.
    (folder / "server" / "index.js").write_text(
        'import { helper } from "./helper.js";\nexport default function register() { return helper; }\n'
    )
    (folder / "server" / "helper.js").write_text(f"export const helper = {n};\n")
    if n % 3 == 0:
        (folder / "handler.js").write_text(
            "export default async function handler(ctx) { return {}; }\n"
        )
    (folder / "PLUGIN.md").write_text(package_text(n, revision))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", "--count", dest="packages", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument(
        "--seed",
        choices=("sync", "index"),
        default="sync",
        help="index: write the rows through package_index alone (no sync, no code check), "
        "to measure search and pages at sizes the sync takes long to reach",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="covel-bench-catalogue-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_floor(folder: Path) -> tuple[float, int]:
    """The floor: walk the packages and read and hash every file, nothing else (seconds, bytes)."""
    start = time.perf_counter()
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            data = Path(dirpath, name).read_bytes()
            hashlib.sha256(data).digest()
            total += len(data)
    return time.perf_counter() - start, total


def stat_floor(folder: Path) -> float:
    """Walking the packages and stat-ing every file (what an unchanged sync must at least do)."""
    start = time.perf_counter()
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            os.stat(os.path.join(dirpath, name))
    return time.perf_counter() - start


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the Node checker): on a machine
    shared with other work it moves less than the wall time."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sync_figures(args: argparse.Namespace, community: Path) -> None:
    """Full sync, unchanged sync, one changed, ten changed, and the floors of the same run."""
    from catalogue.models import Package
    from catalogue.services import packages_sync

    start = time.perf_counter()
    for n in range(args.packages):
        write_package(community, n)
    print(f"{'write the packages':<28} {(time.perf_counter() - start) * 1000:9.1f} ms")
    # Files written in the last two seconds are hashed again by the next sync too (their stats
    # could still change unseen, loader.RACY_NS); a directory is normally older than that.
    time.sleep(2.1)

    def timed(label: str) -> float:
        cpu = cpu_seconds()
        start = time.perf_counter()
        summary = packages_sync()
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds() - cpu
        print(f"{label:<28} {elapsed * 1000:9.1f} ms   cpu {cpu * 1000:9.1f} ms   {summary.line()}")
        return elapsed

    first = timed("full sync")
    print(f"{'peak RSS after the full sync':<28} {peak_rss_mb():9.0f} MB")
    assert Package.objects.count() == args.packages
    checked = Package.objects.filter(code_state=Package.CodeState.NEEDS_APPROVAL).count()
    assert checked == args.packages, f"{checked} of {args.packages} passed the static check"
    unchanged = timed("re-sync, nothing changed")
    write_package(community, args.packages // 2, revision=1)
    one = timed("re-sync, 1 changed")
    for n in range(0, args.packages, max(1, args.packages // 10))[:10]:
        write_package(community, n, revision=2)
    changed = timed("re-sync, 10 changed")
    cpu = cpu_seconds()
    floor, size = read_floor(community)
    cpu = cpu_seconds() - cpu
    print(
        f"{'floor: read + hash all files':<28} {floor * 1000:9.1f} ms   cpu {cpu * 1000:9.1f} ms"
        f"   {size / 1e6:.1f} MB"
    )
    print(f"{'floor: stat all files':<28} {stat_floor(community) * 1000:9.1f} ms")
    print(
        f"unchanged / full = {unchanged / first:.1%}; 1 changed / full = {one / first:.1%}; "
        f"10 changed / full = {changed / first:.1%}"
    )
    print(f"peak RSS of this process: {peak_rss_mb():.0f} MB")


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports KiB), 0 where unknown."""
    try:
        import resource
    except ImportError:  # not on a Unix
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(args: argparse.Namespace, work: Path) -> None:
    community, empty = work / "community", work / "empty"
    community.mkdir()
    empty.mkdir()
    # A bench process is not a deployment: a throw-away key, unless one is set.
    os.environ.setdefault("SECRET_KEY", "bench-catalogue-" + secrets.token_hex(24))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "COVEL_VAR_DIR": str(work / "var"),
            "COVEL_BUNDLED_PLUGINS_DIR": str(empty),
            "COVEL_USER_PLUGINS_DIR": str(empty),
            "COVEL_COMMUNITY_PLUGIN_DIRS": str(community),
            "COVEL_INSTALLED_PLUGINS_DIR": str(work / "installed"),
            "LOG_LEVEL": "WARNING",
            # The pages are rendered without collectstatic's manifest (as in the test suite).
            "COVEL_STATIC_MANIFEST": "false",
        }
    )
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    if connection.vendor != "sqlite":  # a server database keeps the last run's rows
        call_command("flush", interactive=False, verbosity=0)
    if args.seed == "index":
        print(f"database: {connection.vendor}; packages: {args.packages}; folder: {community}")
        seed_rows(community, args.packages)
        search_figures(args)
        page_figures(args)
        return
    print(
        f"database: {connection.vendor}; packages: {args.packages} (community); folder: {community}"
    )
    sync_figures(args, community)

    search_figures(args)
    page_figures(args)


# --- Search and pages (issue 25): figures per query kind, with their query counts ------------


TEMPLATES = 165  # every combination of word, stage and runtime kind write_package makes


def seed_rows(folder: Path, count: int) -> None:
    """Index the first TEMPLATES packages through package_index (no sync, no code check), then
    copy their rows in bulk for the rest, numbered as write_package numbers them: the id, name,
    description and search text are the package's own, the other columns and child rows its
    template's. Seeding, not measuring: the sync reaches these sizes too slowly to wait for."""
    from django.conf import settings
    from django.db import connection, transaction

    from catalogue.models import Package
    from catalogue.services import _load, package_content_hash, package_index

    start = time.perf_counter()
    templates: list[Package] = []
    with transaction.atomic():
        for n in range(min(count, TEMPLATES)):
            write_package(folder, n)
            path = folder / f"pkg-{n:04d}"
            templates.append(
                package_index(
                    result=_load(path, settings.COVEL_HOST_VERSION),
                    source="bundled",
                    content_hash=package_content_hash(path=path),
                    host_version=settings.COVEL_HOST_VERSION,
                )
            )
    for first in range(TEMPLATES, count, 2000):
        with transaction.atomic():
            copy_rows(templates, range(first, min(count, first + 2000)))
    if connection.vendor == "postgresql":
        # What autovacuum does within a minute of a bulk load: statistics and the visibility
        # map (index-only scans). Without it the first minutes measure a table never analysed.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    print(f"{'seeded (index + bulk copies)':<28} {(time.perf_counter() - start) * 1000:9.1f} ms")


def copy_rows(templates: list, numbers: range) -> None:
    """Bulk-create packages numbered `numbers`, each a renumbered copy of its template."""
    from catalogue.models import Package, PackageContract, PackageTag, Runtime, Setting, Tool

    def renumber(text: str, old: int, new: int) -> str:
        for pattern in ("pkg-{:04d}", "helper {}", "number {}."):
            text = text.replace(pattern.format(old), pattern.format(new))
        return text

    rows = []
    for n in numbers:
        template = templates[n % len(templates)]
        fields = {
            f.attname: getattr(template, f.attname)
            for f in Package._meta.concrete_fields
            if f.attname != "id"
        }
        for name in ("package_id", "display_name", "description", "search_text", "name_key"):
            fields[name] = renumber(fields[name], n % len(templates), n)
        fields["source_dir"] = f"/bench/pkg-{n:04d}"
        rows.append(Package(**fields))
    created = Package.objects.bulk_create(rows)
    by_id = {
        p.package_id: p for p in Package.objects.filter(package_id__in=[r.package_id for r in rows])
    }
    for model in (PackageTag, PackageContract, Runtime, Setting, Tool):
        children = list(model.objects.filter(package__in=templates))
        per_template: dict[int, list] = {}
        for child in children:
            per_template.setdefault(child.package_id, []).append(child)
        copies = []
        for n, row in zip(numbers, created, strict=True):
            for child in per_template.get(templates[n % len(templates)].pk, []):
                values = {
                    f.attname: getattr(child, f.attname)
                    for f in model._meta.concrete_fields
                    if f.attname not in ("id", "package_id")
                }
                copies.append(model(package=by_id[row.package_id], **values))
        model.objects.bulk_create(copies, batch_size=1000)


def search_kinds(count: int) -> dict[str, list[str]]:
    """Queries by kind: whole words typed, the start of a word, and misspelt words (each a
    misspelling of a word the generated packages contain)."""
    return {
        "typed": [
            "dice",
            "weather helper",
            "quest",
            "story",
            "engine@2",
            "author 7",
            "lore",
            f"helper {count // 3}",
            "tool",
            "zzz",
        ],
        "prefix": ["narrat", "weath", "inven", "sat", "comb", "pkg-00", "mus"],
        "misspelt": [
            "weathr",
            "wether",
            "inventry",
            f"helpr {count // 2}",
            "combatt",
            "quset",
            "muisc",
        ],
    }


def timed_gets(
    client, urls: list[tuple[str, dict]], rounds: int
) -> tuple[list[float], list[float], set[int]]:
    """Wall and CPU milliseconds of each GET (urls in turn, `rounds` in all) and the query
    counts seen. CPU is this process's (SQLite's work included, PostgreSQL's not): on a shared
    machine it shows what the wall time owes to waiting for a core."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings: list[float] = []
    cpu: list[float] = []
    counts: set[int] = set()
    for i in range(rounds):
        url, params = urls[i % len(urls)]
        with CaptureQueriesContext(connection) as captured:
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(url, params)
            timings.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        assert response.status_code == 200, (url, params, response.content[:500])
        counts.add(len(captured))
    return timings, cpu, counts


def figure_line(label: str, timings: list[float], cpu: list[float], counts: set[int]) -> str:
    queries = "-".join(str(c) for c in sorted({min(counts), max(counts)}))
    return (
        f"{label:<34} x{len(timings):<4} p50 {statistics.median(timings):7.1f} ms  "
        f"p95 {percentile(timings, 0.95):7.1f} ms  (cpu p50 {statistics.median(cpu):5.1f}, "
        f"p95 {percentile(cpu, 0.95):5.1f})  queries {queries}"
    )


def search_figures(args: argparse.Namespace) -> None:
    """GET /api/packages?q= by query kind (target p95 < 50 ms), with the query counts."""
    from django.test import Client

    client = Client()
    client.get("/api/packages", {"q": "warm-up"})
    every: list[float] = []
    for kind, queries in search_kinds(args.packages).items():
        for query in queries:  # every kind finds what it should before it is timed
            found = client.get("/api/packages", {"q": query}).json()["count"]
            assert found > 0 or query in ("tool", "zzz"), f"the {kind} {query!r} found nothing"
        urls = [("/api/packages", {"q": q}) for q in queries]
        timings, cpu, counts = timed_gets(client, urls, args.requests)
        every += timings
        print(figure_line(f"GET /api/packages?q=<{kind}>", timings, cpu, counts))
        timings, cpu, counts = timed_selector(queries, args.requests)
        print(figure_line(f"  package_page(q=<{kind}>) alone", timings, cpu, counts))
    print(
        f"all searches x{len(every)}: p50 {statistics.median(every):.1f} ms, "
        f"p95 {percentile(every, 0.95):.1f} ms (target p95 < 50 ms)"
    )


def timed_selector(queries: list[str], rounds: int) -> tuple[list[float], list[float], set[int]]:
    """The search and its page of rows alone (the selector the API calls), without the HTTP
    handling and the JSON: how much of a request is the database's part."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from catalogue.selectors import PackageFilters, package_page

    timings: list[float] = []
    cpu: list[float] = []
    counts: set[int] = set()
    for i in range(rounds):
        with CaptureQueriesContext(connection) as captured:
            start, start_cpu = time.perf_counter(), time.process_time()
            package_page(filters=PackageFilters(q=queries[i % len(queries)]))
            timings.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        counts.add(len(captured))
    return timings, cpu, counts


def page_figures(args: argparse.Namespace) -> None:
    """The list page, a search on it, and the detail page (browser and API), with query counts."""
    from django.test import Client

    client = Client()
    rounds = max(6, args.requests // 5)
    ids = [f"pkg-{(i * 7919) % args.packages:04d}" for i in range(10)]
    pages = {
        "GET / (list page)": [("/", {})],
        "GET /?q=dice (list page search)": [("/", {"q": "dice"}), ("/", {"q": "weathr"})],
        "GET /packages/<id>/ (detail page)": [(f"/packages/{i}/", {}) for i in ids],
        "GET /api/packages/<id>": [(f"/api/packages/{i}", {}) for i in ids],
    }
    for label, urls in pages.items():
        client.get(*urls[0])  # warm-up
        timings, cpu, counts = timed_gets(client, urls, rounds)
        print(figure_line(label, timings, cpu, counts))


if __name__ == "__main__":
    main()
