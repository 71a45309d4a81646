"""Names, values, reads and writes for the few statements written by hand.

The job hot path, event appends, and the reads and writes every turn or session API call
makes (the session with its world and owner, an API token with its user, the turn's row) run
plain SQL: the ORM spends more time compiling a statement than the database spends running it
(a Session read by primary key costs ~0.4 ms of compiling on the development VM, a few
hundredths of a millisecond of SQLite). Table and
column names still come from the models, parameters still go through each field's own
conversion, and rows read back go through the same converters the ORM applies, so SQLite and
PostgreSQL get and give exactly what the ORM would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models

M = TypeVar("M", bound=models.Model)

# (db table, field name, alias, database vendor) -> quoted column; names never change at run
# time, and quoting goes through the connection proxy, which is slow when done ~100 times a job.
_COLUMNS: dict[tuple[str, str, str, str], str] = {}
# (model, fields, vendor, alias) -> what reading its rows needs (see _Reader, _reader)
_READERS: dict[tuple[Any, ...], _Reader] = {}
_INSERTS: dict[tuple[type[models.Model], str], _Insert] = {}
_UPDATES: dict[tuple[type[models.Model], str], tuple[str, list[Any]]] = {}


def _connection() -> Any:
    # The real connection object, fetched once per statement rather than per attribute.
    return connections[DEFAULT_DB_ALIAS]


class Table:
    """A model's table for hand-written SQL: `str(table)`, `table.col(field)`,
    `table.value(field, value)`. An alias qualifies the columns (`alias."column"`)."""

    def __init__(self, model: type[models.Model], alias: str = "") -> None:
        self.meta = model._meta
        self.alias = alias
        self.connection = _connection()

    def __str__(self) -> str:
        name = self.connection.ops.quote_name(self.meta.db_table)
        return f"{name} AS {self.alias}" if self.alias else name

    def col(self, field: str) -> str:
        key = (self.meta.db_table, field, self.alias, self.connection.vendor)
        found = _COLUMNS.get(key)
        if found is None:
            column = self.connection.ops.quote_name(self.meta.get_field(field).column)
            found = _COLUMNS[key] = f"{self.alias}.{column}" if self.alias else column
        return found

    def value(self, field: str, value: Any) -> Any:
        """The value as the database takes it for this field (dates, UUIDs, JSON...)."""
        return self.meta.get_field(field).get_db_prep_save(value, self.connection)


class _Reader:
    """The select list of a model's fields and the converters of each column, made once."""

    def __init__(
        self, model: type[models.Model], fields: tuple[str, ...], connection: Any, alias: str = ""
    ):
        table = Table(model, alias=alias)
        chosen = [model._meta.get_field(name) for name in fields] if fields else None
        concrete = [f for f in model._meta.concrete_fields if chosen is None or f in chosen]
        if not any(f.primary_key for f in concrete):
            concrete.insert(0, model._meta.pk)  # an instance always knows its key
        self.attnames = [f.attname for f in concrete]
        self.select = ", ".join(table.col(f.name) for f in concrete)
        self.table = str(table)
        # What the ORM's compiler applies to a column: the backend's converters, then the
        # field's own (JSON decoding, UUIDs and dates on SQLite, ...).
        self.columns = []
        for f in concrete:
            col = f.get_col(model._meta.db_table)
            converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            self.columns.append((col, converters))

    def instance(self, model: type[M], row: Sequence[Any], connection: Any) -> M:
        values = []
        for value, (col, converters) in zip(row, self.columns, strict=True):
            for convert in converters:
                value = convert(value, col, connection)
            values.append(value)
        return model.from_db(DEFAULT_DB_ALIAS, self.attnames, values)


def read(
    model: type[M], where: str, params: Sequence[Any], *, fields: Sequence[str] = ()
) -> list[M]:
    """Instances of `model` matching a hand-written WHERE (column names from Table.col; it may
    end in an ORDER BY).

    `fields` limits the columns read (the rest are deferred, loaded on access like `.only()`).
    """
    connection = _connection()
    reader = _reader(model, connection, fields=tuple(fields))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {reader.select} FROM {reader.table} WHERE {where}", params)
        rows = cursor.fetchall()
    return [reader.instance(model, row, connection) for row in rows]


def read_by_pk(model: type[M], pk: Any, *, fields: Sequence[str] = ()) -> M | None:
    table = Table(model)
    pk_name = model._meta.pk.name
    found = read(model, f"{table.col(pk_name)} = %s", [table.value(pk_name, pk)], fields=fields)
    return found[0] if found else None


def read_by_pk_related(model: type[M], pk: Any, *, related: str | Sequence[str]) -> M | None:
    """read_by_pk with the rows its foreign keys `related` name read in the same statement
    (JOINs) and set on the instance, as select_related would: one round trip, not several.
    The keys must be NOT NULL (an inner join)."""
    table = Table(model, alias="t")
    pk_name = model._meta.pk.name
    where = f"{table.col(pk_name)} = %s"
    return read_one_related(model, where, [table.value(pk_name, pk)], related=related)


def read_one_related(
    model: type[M], where: str, params: Sequence[Any], *, related: str | Sequence[str]
) -> M | None:
    """The first row matching a hand-written WHERE (its columns from Table(model, alias="t")),
    with its parents as read_by_pk_related reads them."""
    connection = _connection()
    names = [related] if isinstance(related, str) else list(related)
    parents = [model._meta.get_field(name).related_model for name in names]
    aliases = [f"r{i}" for i in range(len(names))]
    readers = [_reader(model, connection, "t")]
    readers += [_reader(parent, connection, a) for parent, a in zip(parents, aliases, strict=True)]
    table = Table(model, alias="t")
    joins = " ".join(
        f"JOIN {r.table} ON {Table(parent, alias=a).col(parent._meta.pk.name)} = {table.col(name)}"
        for r, parent, a, name in zip(readers[1:], parents, aliases, names, strict=True)
    )
    select = ", ".join(r.select for r in readers)
    sql = f"SELECT {select} FROM {readers[0].table} {joins} WHERE {where}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(readers[0].columns)
    instance = readers[0].instance(model, row[:width], connection)
    for reader, parent, name in zip(readers[1:], parents, names, strict=True):
        part = row[width : width + len(reader.columns)]
        width += len(reader.columns)
        setattr(instance, name, reader.instance(parent, part, connection))
    return instance


def _reader(
    model: type[models.Model], connection: Any, alias: str = "", fields: tuple[str, ...] = ()
) -> _Reader:
    key = (model, fields, connection.vendor, alias)
    found = _READERS.get(key)
    if found is None:
        found = _READERS[key] = _Reader(model, fields, connection, alias=alias)
    return found


class _Insert:
    def __init__(self, model: type[models.Model], connection: Any) -> None:
        table = Table(model)
        meta = model._meta
        pk = meta.pk
        # An auto-incrementing key is the database's to choose; any other key is ours.
        self.returns_pk = bool(getattr(pk, "db_returning", False))
        self.fields = [f for f in meta.concrete_fields if not (self.returns_pk and f is pk)]
        columns = ", ".join(table.col(f.name) for f in self.fields)
        marks = ", ".join(["%s"] * len(self.fields))
        self.sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"
        if self.returns_pk and connection.features.can_return_columns_from_insert:
            self.sql += f" RETURNING {table.col(pk.name)}"


def insert(instance: models.Model, *, ignore_conflicts: bool = False) -> bool:
    """INSERT one new instance as Model.save() would (field defaults, auto_now_add, the
    database-made key set back on it), without compiling an insert query. No signals are sent:
    use it only for models nobody listens to.

    ignore_conflicts: a row a unique constraint already holds is left alone (ON CONFLICT DO
    NOTHING) and False is returned; the instance is then not saved."""
    connection = _connection()
    model = type(instance)
    key = (model, connection.vendor)
    plan = _INSERTS.get(key)
    if plan is None:
        plan = _INSERTS[key] = _Insert(model, connection)
    params = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in plan.fields]
    sql = plan.sql
    if ignore_conflicts:
        head, returning = (sql.split(" RETURNING ") + [""])[:2]
        sql = f"{head} ON CONFLICT DO NOTHING" + (f" RETURNING {returning}" if returning else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        returning = plan.returns_pk and connection.features.can_return_columns_from_insert
        # With RETURNING, SQLite tells the row count only once the rows are read.
        if ignore_conflicts and not returning and cursor.rowcount == 0:
            return False
        if plan.returns_pk:
            if connection.features.can_return_columns_from_insert:
                row = cursor.fetchone()
                if row is None:  # the conflict, where rowcount is not told before the fetch
                    return False
                new_pk = row[0]
            else:
                new_pk = cursor.lastrowid
            instance.pk = new_pk
    instance._state.adding = False
    instance._state.db = DEFAULT_DB_ALIAS
    return True


def update(instance: models.Model) -> bool:
    """UPDATE every column of an instance's row by its key, as Model.save() does for a row that
    exists (each field's pre_save applied), without compiling an update query; False when no
    row has that key (the caller decides: save() would have inserted one). No signals."""
    connection = _connection()
    model = type(instance)
    key = (model, connection.vendor)
    plan = _UPDATES.get(key)
    if plan is None:
        table = Table(model)
        pk = model._meta.pk
        fields = [f for f in model._meta.concrete_fields if f is not pk]
        assign = ", ".join(f"{table.col(f.name)} = %s" for f in fields)
        plan = _UPDATES[key] = (
            f"UPDATE {table} SET {assign} WHERE {table.col(pk.name)} = %s",
            fields,
        )
    sql, fields = plan
    params = [f.get_db_prep_save(f.pre_save(instance, False), connection) for f in fields]
    params.append(model._meta.pk.get_db_prep_save(instance.pk, connection))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount > 0


def update_returning(
    model: type[M], assign: str, where: str, params: Sequence[Any], *, also: str = ""
) -> M | None:
    """UPDATE the rows matching a hand-written WHERE (SET `assign`) and read the first one back
    as an instance, in one statement (UPDATE ... RETURNING); None when none matched.

    `also`: more expressions for the RETURNING list, evaluated for each changed row only (their
    values are not kept: a function called for its effect, such as PostgreSQL's set_config)."""
    connection = _connection()
    reader = _reader(model, connection)
    returning = f"{reader.select}, {also}" if also else reader.select
    sql = f"UPDATE {reader.table} SET {assign} WHERE {where} RETURNING {returning}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        cursor.fetchall()  # SQLite applies an UPDATE ... RETURNING fully once it is read through
    if row is None:
        return None
    return reader.instance(model, row[: len(reader.columns)], connection)
