"""Package search behind a small interface, with a database implementation first.

Every word of the query must match. A word matches a package when the package's lower-cased
search_text contains it (answered by an index: FTS5 trigram on SQLite, see search_index.py;
pg_trgm's GIN on PostgreSQL), or, for a misspelt word (`affinty`, `inventry`), when it is close
to a word of the package's name or id:

- everywhere, by a Python edit-similarity over the words of the names and ids (a vocabulary
  kept per process, see Vocabulary; one small query per search checks it is current), whose
  close words are then searched for like typed ones; it catches transpositions ("quset") that
  share too few trigrams. A short word (4 or 5 letters) has too few letters for a ratio: it is
  corrected when one edit (a letter changed, added, dropped, or two neighbours swapped) turns
  it into a known word ("dise", "dcie", "dicr" -> "dice");
- and on PostgreSQL with the pg_trgm extension, also by trigram word similarity over the whole
  search text, in the same query.

Exact id/name matches rank far above partial ones, and fuzzy matches rank below every literal
one. CJK text has no spaces: a word of it matches as a substring, as any other word does.
"""

from __future__ import annotations

import bisect
import difflib
import re
import string
import threading
from dataclasses import dataclass, field
from typing import Protocol

from django.contrib.postgres.lookups import TrigramWordSimilar
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models import (
    BooleanField,
    Case,
    F,
    FloatField,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import Func
from django.db.models.signals import post_delete, post_save

from catalogue.models import Package
from catalogue.search_index import FTS_TABLE, sqlite_trigram_supported

# Rank bands: an exact id or name beats any prefix, which beats any match inside the name,
# which beats a match only in the description, tags or contracts; a match that needed a
# spelling correction comes last.
RANK_EXACT = 100
RANK_PREFIX = 50
RANK_IN_NAME = 30
RANK_ELSEWHERE = 10
RANK_FUZZY_NAME = 8
RANK_FUZZY = 5

# Words shorter than this are never corrected: "map" must not find "mop".
FUZZY_MIN_LENGTH = 4
# difflib ratio for the Python fallback; trigram word similarity on PostgreSQL.
FUZZY_RATIO = 0.8
TRIGRAM_THRESHOLD = 0.7
# Up to this length a word is corrected by one edit instead of by the ratio.
SHORT_WORD_LENGTH = 5
# A suggestion under an empty result may be further off than a silent correction.
SUGGEST_RATIO = 0.5
_WORD = re.compile(r"[\w@.-]+")


class PackageSearch(Protocol):
    def search(self, *, queryset: QuerySet[Package], query: str) -> QuerySet[Package]:
        """Keep the packages matching every word of query, annotated with an integer `rank`."""
        ...


class _WordSimilarity(Func):
    """pg_trgm's word_similarity(needle, haystack): how well needle matches a word of haystack."""

    function = "word_similarity"
    output_field = FloatField()


# Whether pg_trgm is installed, by database (host, port, name): asked once per process. Under
# the connection pool (DB_POOL) connection_created fires for every request's connection, so a
# per-connection check was a query per request.
_trigram_known: dict[tuple[str, str, str], bool] = {}


def _note_trigram(sender, connection, **kwargs) -> None:
    if connection.vendor != "postgresql":
        return
    s = connection.settings_dict
    key = (str(s.get("HOST")), str(s.get("PORT")), str(s.get("NAME")))
    known = _trigram_known.get(key)
    if known is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
            known = _trigram_known[key] = cursor.fetchone() is not None
    connection.covel_trigram = known


def trigram_forget() -> None:
    """Ask again on the next connection (the migration that creates pg_trgm calls this)."""
    _trigram_known.clear()


connection_created.connect(_note_trigram, dispatch_uid="catalogue.search.trigram")


def trigram_available(alias: str = "default") -> bool:
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    return bool(getattr(connection, "covel_trigram", False))


def _words(query: str) -> list[str]:
    return " ".join(query.split()).casefold().split(" ") if query.strip() else []


def _fuzzy(word: str) -> bool:
    return len(word) >= FUZZY_MIN_LENGTH and word.isascii()


def one_edit_apart(a: str, b: str) -> bool:
    """True when one substitution, insertion, deletion or swap of neighbours turns a into b."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        differ = [i for i in range(len(a)) if a[i] != b[i]]
        if len(differ) == 1:
            return True
        return (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and a[differ[0]] == b[differ[1]]
            and a[differ[1]] == b[differ[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def close_words(words: list[str], vocabulary: set[str]) -> dict[str, list[str]]:
    """For each word not found in any vocabulary word, the vocabulary words it may be a
    misspelling of (best first). The rule itself, over every word given: Vocabulary applies it
    to the few candidates a large vocabulary can have."""
    corrections: dict[str, list[str]] = {}
    for word in words:
        if not _fuzzy(word) or any(word in known for known in vocabulary):
            continue
        near = [w for w in vocabulary if abs(len(w) - len(word)) <= 2]
        found = difflib.get_close_matches(word, near, n=3, cutoff=FUZZY_RATIO)
        if len(word) <= SHORT_WORD_LENGTH:
            # Short words: one edit, whatever the ratio says ("dise" vs "dice" is only 0.75).
            found += sorted(w for w in near if w not in found and one_edit_apart(word, w))
        if found:
            corrections[word] = found[:3]
    return corrections


# The characters one edit of a word may bring in (only ASCII words are corrected).
_EDIT_ALPHABET = string.ascii_lowercase + string.digits + "-@._"
# The words that share the first or the last half of a longer word, looked at for a correction
# further than one edit: at most this many on each side, so that thousands of ids that start
# alike ("pkg-0001", "pkg-0002" ...) cost no more than a few.
HALF_MATCH_LIMIT = 200


def one_edit_variants(word: str) -> set[str]:
    """Every string one edit from word: a letter dropped, two neighbours swapped, a letter
    changed or added (from _EDIT_ALPHABET)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    dropped = {a + b[1:] for a, b in splits if b}
    swapped = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    changed = {a + c + b[1:] for a, b in splits if b for c in _EDIT_ALPHABET}
    added = {a + c + b for a, b in splits for c in _EDIT_ALPHABET}
    return (dropped | swapped | changed | added) - {word}


@dataclass
class Vocabulary:
    """The words of every package's name and id, indexed so that correcting a word looks at a
    few candidates instead of at every word: its one-edit variants (set lookups), and for a word
    of 5 letters or more, the words that start with its first half or end with its last half
    (bisection in two sorted lists), which is where a second edit hides. close_words then
    judges the candidates by its usual rule."""

    words: set[str]
    # Every word, one a line: "is this word inside a known word" is one C-speed scan.
    joined: str = ""
    ordered: list[str] = field(default_factory=list)
    backwards: list[str] = field(default_factory=list)  # each word reversed, sorted

    @classmethod
    def of(cls, words: set[str]) -> Vocabulary:
        return cls(
            words=words,
            joined="\n".join(words),
            ordered=sorted(words),
            backwards=sorted(w[::-1] for w in words),
        )

    def close_words(self, words: list[str]) -> dict[str, list[str]]:
        corrections: dict[str, list[str]] = {}
        for word in words:
            if not _fuzzy(word) or word in self.joined:
                continue
            corrections.update(close_words([word], self._candidates(word)))
        return corrections

    def _candidates(self, word: str) -> set[str]:
        found = one_edit_variants(word) & self.words
        if len(word) >= SHORT_WORD_LENGTH:
            half = len(word) // 2
            found.update(_starting_with(self.ordered, word[:half]))
            found.update(w[::-1] for w in _starting_with(self.backwards, word[::-1][:half]))
        return found


def _starting_with(ordered: list[str], prefix: str) -> list[str]:
    start = bisect.bisect_left(ordered, prefix)
    found = []
    for word in ordered[start : start + HALF_MATCH_LIMIT]:
        if not word.startswith(prefix):
            break
        found.append(word)
    return found


def vocabulary_words(rows: list[tuple[str, str]]) -> set[str]:
    """The words corrections aim at, from (name_key, package_id) rows."""
    vocabulary: set[str] = set()
    for name_key, package_id in rows:
        vocabulary.update(_WORD.findall(name_key))
        vocabulary.update(_WORD.findall(package_id.replace("-", " ")))
        vocabulary.add(package_id)
    return vocabulary


# The vocabulary per database, with the (row count, latest indexed_at) it was read at. Every
# sync that adds, re-indexes or removes a package moves one of the two; a save or delete in
# this process forgets it at once.
_vocabularies: dict[tuple[str, str], tuple[tuple[int, str], Vocabulary]] = {}
# One query whatever the cache holds, so a search's query count never depends on it: the
# version, then the rows only when the version is not the one given (or none is cached). The
# count and the latest indexed_at are each read from an index (on PostgreSQL, an index-only
# scan once autovacuum has seen the table).
_VOCABULARY_QUERY = (
    "WITH v AS (SELECT (SELECT COUNT(*) FROM catalogue_package) AS n, "
    "(SELECT COALESCE(CAST(MAX(indexed_at) AS TEXT), '') FROM catalogue_package) AS at) "
    "SELECT n, at, NULL, NULL FROM v "
    "UNION ALL "
    "SELECT NULL, NULL, name_key, package_id FROM catalogue_package "
    "WHERE %s OR NOT EXISTS (SELECT 1 FROM v WHERE v.n = %s AND v.at = %s)"
)
_vocabulary_lock = threading.Lock()


def vocabulary_forget(**kwargs) -> None:
    _vocabularies.clear()


post_save.connect(vocabulary_forget, sender=Package, dispatch_uid="catalogue.search.vocab.save")
post_delete.connect(vocabulary_forget, sender=Package, dispatch_uid="catalogue.search.vocab.del")


def vocabulary_current(alias: str = "default") -> Vocabulary:
    """The names-and-ids vocabulary of database alias, read again only when it changed."""
    connection = connections[alias]
    key = (alias, str(connection.settings_dict.get("NAME")))
    cached = _vocabularies.get(key)
    version, vocabulary = cached if cached else ((-1, ""), None)
    with connection.cursor() as cursor:
        cursor.execute(_VOCABULARY_QUERY, [cached is None, version[0], version[1]])
        rows = cursor.fetchall()
    current = next((int(r[0]), str(r[1])) for r in rows if r[2] is None)
    names = [(r[2], r[3]) for r in rows if r[2] is not None]
    if vocabulary is None or current != version or names:
        vocabulary = Vocabulary.of(vocabulary_words(names))
        with _vocabulary_lock:
            _vocabularies[key] = (current, vocabulary)
    return vocabulary


def nearest_names(query: str, names: dict[str, str], *, limit: int = 3) -> list[str]:
    """For an empty result: the package ids whose id or name is nearest the query (best
    first), looser than a correction because it is only a suggestion."""
    wanted = " ".join(_words(query))
    if not wanted:
        return []
    matcher = difflib.SequenceMatcher()
    matcher.set_seq1(wanted)

    def score(candidate: str) -> float:
        matcher.set_seq2(candidate)
        # The quick bounds are never below ratio(): a candidate under them cannot qualify.
        if matcher.real_quick_ratio() < SUGGEST_RATIO or matcher.quick_ratio() < SUGGEST_RATIO:
            return 0.0
        return matcher.ratio()

    scored = []
    for package_id, name in names.items():
        best = max(score(package_id.casefold()), score(name.casefold()))
        # The query itself found nothing (other filters hid it): suggesting it again is no help.
        if best >= SUGGEST_RATIO and package_id.casefold() != wanted:
            scored.append((-best, package_id))
    return [package_id for _, package_id in sorted(scored)[:limit]]


def fts_available(alias: str) -> bool:
    """Whether the SQLite FTS5 trigram index of migration 0011 answers substring tests."""
    return connections[alias].vendor == "sqlite" and sqlite_trigram_supported()


class _FtsMatch(Func):
    """`+id IN (SELECT rowid FROM the FTS table WHERE it MATCHes expression)`. The unary plus
    keeps SQLite from looking each match up in the table (a wide row per package, its
    manifest): it scans a narrow covering index instead (the count: any index; the page's
    order: catalogue_package_name_order) and tests each id against the matches."""

    arg_joiner = f" IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH "
    template = "+%(expressions)s)"
    output_field = BooleanField()
    conditional = True


def _fts_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


class DatabasePackageSearch:
    def search(self, *, queryset: QuerySet[Package], query: str) -> QuerySet[Package]:
        words = _words(query)
        if not words:
            return queryset.annotate(rank=Value(0, output_field=IntegerField()))
        needle = " ".join(words)
        # The edit-similarity corrections run everywhere (they catch transpositions such as
        # "quset", which share too few trigrams); pg_trgm adds its matches where installed.
        corrections = self._corrections(queryset, words)
        similar: set[str] = set()
        if trigram_available(queryset.db):
            # Only a word no package contains is a misspelling to correct: "narrator" must not
            # also find every package that says "narrative".
            similar = {
                w
                for w in words
                if _fuzzy(w) and not queryset.filter(search_text__contains=w).exists()
            }
        fts = fts_available(queryset.db)
        indexed: list[list[str]] = []  # on SQLite, words the FTS5 index answers
        matches = Q()
        for word in words:
            alternatives = [word, *corrections.get(word, [])]
            if word in similar and len(alternatives) == 1:
                # No package contains the word and the names offer no correction: pg_trgm's
                # word similarity looks for it in every text, through the GIN index. (Where a
                # name does correct it, scoring every package holding the correction as well
                # cost 300 ms at 10,000 packages, to find the same packages.)
                matches &= self._trigram_match(queryset.db, word)
                continue
            # A trigram index cannot test fewer than 3 characters: LIKE reads those.
            if fts and all(len(a) >= 3 for a in alternatives):
                indexed.append(alternatives)
                continue
            either = Q()
            for alternative in alternatives:
                either |= Q(search_text__contains=alternative)
            matches &= either
        if indexed:
            # Each word a phrase (a substring, to the trigram tokenizer), its corrections ORed.
            expression = " AND ".join(
                "(" + " OR ".join(_fts_phrase(a) for a in alternatives) + ")"
                for alternatives in indexed
            )
            matches &= Q(_FtsMatch(F("pk"), Value(expression)))
        by_name = [
            When(Q(package_id=needle) | Q(name_key=needle), then=Value(RANK_EXACT)),
            When(
                Q(package_id__startswith=needle) | Q(name_key__startswith=needle),
                then=Value(RANK_PREFIX),
            ),
            When(
                Q(package_id__contains=needle) | Q(name_key__contains=needle),
                then=Value(RANK_IN_NAME),
            ),
        ]
        if not corrections and not similar:
            # Every match holds every word: no need to test search_text again on each row.
            return queryset.filter(matches).annotate(
                rank=Case(*by_name, default=Value(RANK_ELSEWHERE), output_field=IntegerField())
            )
        corrected = " ".join(corrections.get(w, [w])[0] for w in words)
        fuzzy_name = Q(package_id__contains=corrected) | Q(name_key__contains=corrected)
        return queryset.filter(matches).annotate(
            rank=Case(
                *by_name,
                When(self._literal(queryset.db, words), then=Value(RANK_ELSEWHERE)),
                When(fuzzy_name, then=Value(RANK_FUZZY_NAME)),
                default=Value(RANK_FUZZY),
                output_field=IntegerField(),
            )
        )

    def _literal(self, db: str, words: list[str]) -> Q:
        """Every word itself (no correction) is in the package's text: on SQLite, asked of the
        FTS index, so that ranking reads no package row (see _FtsMatch)."""
        if fts_available(db) and all(len(w) >= 3 for w in words):
            return Q(_FtsMatch(F("pk"), Value(" AND ".join(_fts_phrase(w) for w in words))))
        literal = Q()
        for word in words:
            literal &= Q(search_text__contains=word)
        return literal

    def _corrections(self, queryset: QuerySet[Package], words: list[str]) -> dict[str, list[str]]:
        if not any(_fuzzy(w) for w in words):
            return {}
        return vocabulary_current(queryset.db).close_words(words)

    def _trigram_match(self, db: str, word: str) -> Q:
        """Packages with a word pg_trgm finds similar enough to word, as a subquery of its
        own so that it uses the GIN index of migration 0009 (in an OR with other tests in one
        WHERE, PostgreSQL scored every row): the operator (pg_trgm's own threshold, 0.6) picks
        the few candidates, and the exact threshold is then checked on those."""
        similar = (
            Package.objects.using(db)
            .filter(TrigramWordSimilar(F("search_text"), Value(word)))
            .annotate(similarity=_WordSimilarity(Value(word), "search_text"))
            .filter(similarity__gte=TRIGRAM_THRESHOLD)
            .values("pk")
        )
        return Q(pk__in=similar)


def package_search_backend() -> PackageSearch:
    return DatabasePackageSearch()
