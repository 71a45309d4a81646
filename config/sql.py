"""Names and values for the few statements written by hand.

The job hot path and event appends run plain SQL: the ORM spends more time compiling such a
statement than the database spends running it. Their table and column names still come from
the models and their parameters still go through each field's own conversion, so SQLite and
PostgreSQL get exactly what the ORM would send.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models


class Table:
    """A model's table for hand-written SQL: `str(table)`, `table.col(field)`,
    `table.value(field, value)`. An alias qualifies the columns (`alias."column"`)."""

    def __init__(self, model: type[models.Model], alias: str = "") -> None:
        self.meta = model._meta
        self.alias = alias

    def __str__(self) -> str:
        name = connection.ops.quote_name(self.meta.db_table)
        return f"{name} AS {self.alias}" if self.alias else name

    def col(self, field: str) -> str:
        column = connection.ops.quote_name(self.meta.get_field(field).column)
        return f"{self.alias}.{column}" if self.alias else column

    def value(self, field: str, value: Any) -> Any:
        """The value as the database takes it for this field (dates, UUIDs, JSON...)."""
        return self.meta.get_field(field).get_db_prep_save(value, connection)
