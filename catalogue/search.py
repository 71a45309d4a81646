"""Package search behind a small interface, with a database implementation first.

The database implementation works the same on SQLite and PostgreSQL: it scans a lower-cased
search_text column with LIKE, and ranks exact id/name matches far above partial ones.
"""

from __future__ import annotations

from typing import Protocol

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from catalogue.models import Package

# Rank bands: an exact id or name beats any prefix, which beats any match inside the name,
# which beats a match only in the description, tags or contracts.
RANK_EXACT = 100
RANK_PREFIX = 50
RANK_IN_NAME = 30
RANK_ELSEWHERE = 10


class PackageSearch(Protocol):
    def search(self, *, queryset: QuerySet[Package], query: str) -> QuerySet[Package]:
        """Keep the packages matching every word of query, annotated with an integer `rank`."""
        ...


class DatabasePackageSearch:
    def search(self, *, queryset: QuerySet[Package], query: str) -> QuerySet[Package]:
        needle = " ".join(query.split()).casefold()
        if not needle:
            return queryset.annotate(rank=Value(0, output_field=IntegerField()))
        for word in needle.split(" "):
            queryset = queryset.filter(search_text__contains=word)
        return queryset.annotate(
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
                default=Value(RANK_ELSEWHERE),
                output_field=IntegerField(),
            )
        )


def package_search_backend() -> PackageSearch:
    return DatabasePackageSearch()
