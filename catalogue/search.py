"""Package search behind a small interface, with a database implementation first.

Every word of the query must match. A word matches a package when the package's lower-cased
search_text contains it, or, for a misspelt word (`affinty`, `inventry`), when it is close to a
word of the package's name or id:

- everywhere, by a Python edit-similarity over the names and ids (one small extra query per
  search, whatever the number of packages), whose close words are then searched for like typed
  ones; it catches transpositions ("quset") that share too few trigrams. A short word (4 or 5
  letters) has too few letters for a ratio: it is corrected when one edit (a letter changed,
  added, dropped, or two neighbours swapped) turns it into a known word ("dise", "dcie",
  "dicr" -> "dice");
- and on PostgreSQL with the pg_trgm extension, also by trigram word similarity over the whole
  search text, in the same query.

Exact id/name matches rank far above partial ones, and fuzzy matches rank below every literal
one. CJK text has no spaces: a word of it matches as a substring, as any other word does.
"""

from __future__ import annotations

import difflib
import re
from typing import Protocol

from django.contrib.postgres.lookups import TrigramWordSimilar
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models import Case, F, FloatField, IntegerField, Q, QuerySet, Value, When
from django.db.models.expressions import Func

from catalogue.models import Package

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
    misspelling of (best first)."""
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


def nearest_names(query: str, names: dict[str, str], *, limit: int = 3) -> list[str]:
    """For an empty result: the package ids whose id or name is nearest the query (best
    first), looser than a correction because it is only a suggestion."""
    wanted = " ".join(_words(query))
    if not wanted:
        return []
    scored = []
    for package_id, name in names.items():
        score = max(
            difflib.SequenceMatcher(None, wanted, candidate).ratio()
            for candidate in (package_id.casefold(), name.casefold())
        )
        # The query itself found nothing (other filters hid it): suggesting it again is no help.
        if score >= SUGGEST_RATIO and package_id.casefold() != wanted:
            scored.append((-score, package_id))
    return [package_id for _, package_id in sorted(scored)[:limit]]


class DatabasePackageSearch:
    def search(self, *, queryset: QuerySet[Package], query: str) -> QuerySet[Package]:
        words = _words(query)
        if not words:
            return queryset.annotate(rank=Value(0, output_field=IntegerField()))
        needle = " ".join(words)
        literal = Q()
        for word in words:
            literal &= Q(search_text__contains=word)
        # The edit-similarity corrections run everywhere (they catch transpositions such as
        # "quset", which share too few trigrams); pg_trgm adds its matches where installed.
        corrections = self._corrections(queryset, words)
        similar: dict[str, str] = {}
        if trigram_available(queryset.db):
            # Only a word no package contains is a misspelling to correct: "narrator" must not
            # also find every package that says "narrative".
            unknown = [w for w in words if not queryset.filter(search_text__contains=w).exists()]
            queryset, similar = self._trigram(queryset, unknown)
        matches = Q()
        for word in words:
            either = Q(search_text__contains=word)
            for alternative in corrections.get(word, []):
                either |= Q(search_text__contains=alternative)
            if word in similar:
                # The operator (pg_trgm's own threshold, 0.6) lets the GIN index of migration
                # 0009 pick the few candidates; the exact threshold is then checked on those.
                either |= Q(TrigramWordSimilar(F("search_text"), Value(word))) & Q(
                    **{f"{similar[word]}__gte": TRIGRAM_THRESHOLD}
                )
            matches &= either
        corrected = [" ".join(corrections.get(w, [w])[0] for w in words)] if corrections else []
        fuzzy_name = Q(pk__in=[])
        for guess in corrected:
            fuzzy_name |= Q(package_id__contains=guess) | Q(name_key__contains=guess)
        return queryset.filter(matches).annotate(
            rank=Case(
                When(Q(package_id=needle) | Q(name_key=needle), then=Value(RANK_EXACT)),
                When(
                    Q(package_id__startswith=needle) | Q(name_key__startswith=needle),
                    then=Value(RANK_PREFIX),
                ),
                When(
                    Q(package_id__contains=needle) | Q(name_key__contains=needle),
                    then=Value(RANK_IN_NAME),
                ),
                When(literal, then=Value(RANK_ELSEWHERE)),
                When(fuzzy_name, then=Value(RANK_FUZZY_NAME)),
                default=Value(RANK_FUZZY),
                output_field=IntegerField(),
            )
        )

    def _corrections(self, queryset: QuerySet[Package], words: list[str]) -> dict[str, list[str]]:
        if not any(_fuzzy(w) for w in words):
            return {}
        vocabulary: set[str] = set()
        for name_key, package_id in Package.objects.using(queryset.db).values_list(
            "name_key", "package_id"
        ):
            vocabulary.update(_WORD.findall(name_key))
            vocabulary.update(_WORD.findall(package_id.replace("-", " ")))
            vocabulary.add(package_id)
        return close_words(words, vocabulary)

    def _trigram(
        self, queryset: QuerySet[Package], words: list[str]
    ) -> tuple[QuerySet[Package], dict[str, str]]:
        """Annotate each correctable word's pg_trgm word similarity; {word: annotation name}."""
        names: dict[str, str] = {}
        for index, word in enumerate(words):
            if _fuzzy(word) and word not in names:
                names[word] = f"similarity_{index}"
                queryset = queryset.annotate(
                    **{names[word]: _WordSimilarity(Value(word), "search_text")}
                )
        return queryset, names


def package_search_backend() -> PackageSearch:
    return DatabasePackageSearch()
