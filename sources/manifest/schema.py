"""Every table and key of plugin.toml, as the spec page lists them.

A key's kind is one of:
  "string", "bool", "int", "strings" (list of strings), "duration" (a Go duration string),
  "regex" (a Go / RE2 regular expression), "strings_table" (table of strings),
  ("enum", values) (a string among values), ("enums", values) (a list of such strings),
  ("table", TABLE) (a nested table), ("array", TABLE) (an array of tables).
A TABLE maps each key to (kind, required).
"""

from __future__ import annotations

from typing import Any

Kind = Any
Table = dict[str, tuple[Kind, bool]]

NOTIFY_TOPICS = (
    "rounds",
    "gates",
    "marks",
    "tasks",
    "turns",
    "sessions",
    "overrides",
    "viewer",
    "config",
    "events",
    "workspaces",
    "agents",
)
FACT_TYPES = ("bool", "int", "string", "list", "duration", "timestamp")
SURFACES = ("web", "tui", "menubar")
VERDICTS = ("APPROVE", "REQUEST_CHANGES", "COMMENT")

# Enum keys whose spec row gives the empty string a meaning ("empty is exact", ...).
EMPTY_ALLOWED = {("facets", "match"), ("keys", "surface"), ("tools", "posts")}

CODEC: Table = {
    "keys": ("strings", True),
    "urls": ("strings", False),
    "label": ("string", False),
    "fields": ("strings_table", False),
    "fold_case": ("bool", False),
    "target": ("string", False),
    "targets": ("regex", False),
}
FACT: Table = {
    "name": ("string", True),
    "type": (("enum", FACT_TYPES), True),
    "doc": ("string", True),
    "slots": (("enums", ("action", "turn", "name")), False),
    "dim": ("bool", False),
    "enum": ("strings", False),
    "untrusted": ("bool", False),
    "time_varying": ("bool", False),
}
EFFECT: Table = {
    "name": ("string", True),
    "applies": (("enums", ("turn", "draft")), True),
    "doc": ("string", True),
    "silent": ("bool", False),
}
EVENT: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "resolves": (("enum", ("review", "merged", "closed")), False),
    "answers_asked_turn": ("bool", False),
    "verdicts": ("strings_table", False),
}
ROLE: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "round_kind": ("string", False),
    "reconcile": ("string", False),
    "prepare": ("string", False),
    "launch": ("string", False),
    "workspace": ("string", False),
    "context": ("string", False),
    "policy": ("string", False),
    "drives_row": ("bool", False),
}
DELIVERY: Table = {"name": ("string", True), "posts": ("bool", False)}
DRAFT_KIND: Table = {
    "name": ("string", True),
    "purpose": ("string", False),
    "delivery": ("string", False),
}
NAMED_DOC: Table = {"name": ("string", True), "doc": ("string", True)}
PREDICATE: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "facts": ("strings", True),
}
SITUATION: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "rank": ("int", False),
}
JOB: Table = {
    "name": ("string", True),
    "every": ("duration", True),
    "every_from": ("string", False),
    "timeout": ("duration", False),
    "retry": ("duration", False),
}
VIEW: Table = {
    "id": ("string", True),
    "rows": ("bool", False),
    "order": ("int", False),
    "surfaces": (("enums", SURFACES), False),
}
BUCKET: Table = {
    "id": ("string", True),
    # Required on every bucket but the last: checked as a rule, not here.
    "within": ("duration", False),
}
FACET: Table = {
    "id": ("string", True),
    "field": ("string", False),
    "group": ("bool", False),
    "sort": (("enum", ("rank", "text", "time")), False),
    "rank": ("strings", False),
    "buckets": (("array", BUCKET), False),
    "match": (("enum", ("exact", "suffix", "prefix", "team")), False),
    "menu": ("bool", False),
    "strip": ("bool", False),
}
MENUBAR: Table = {"id": ("string", True), "view": ("string", True)}
KEY_BINDING: Table = {
    "key": ("string", True),
    "action": ("string", True),
    "surface": (("enum", SURFACES), False),
}
UI: Table = {
    "views": (("array", VIEW), False),
    "facets": (("array", FACET), False),
    "menubar": (("array", MENUBAR), False),
    "keys": (("array", KEY_BINDING), False),
    "web": ("string", False),
}
COMMAND: Table = {"name": ("string", True), "usage": ("string", False)}
ANSWER_FIELD: Table = {"name": ("string", True), "number": ("bool", False)}
ANSWER: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "fields": (("array", ANSWER_FIELD), False),
}
TOOL: Table = {
    "name": ("string", True),
    "doc": ("string", True),
    "input": ("string", True),
    "posts": (("enum", ("now",)), False),
    "answers": (("array", ANSWER), False),
}
SOURCE: Table = {
    "name": ("string", True),
    "codec": (("table", CODEC), True),
    "slot": ("string", True),
    "brief_subject": ("bool", False),
    "rounds": ("bool", False),
    "payload": ("string", False),
    "facts": (("array", FACT), False),
    "effects": (("array", EFFECT), False),
    "events": (("array", EVENT), False),
    "roles": (("array", ROLE), False),
    "row_kinds": ("strings", False),
    "deliveries": (("array", DELIVERY), False),
    "draft_kinds": (("array", DRAFT_KIND), False),
    "default_delivery": ("string", False),
    "signals": (("array", NAMED_DOC), False),
    "predicates": (("array", PREDICATE), False),
    "marks": (("array", NAMED_DOC), False),
    "kinds": ("strings", False),
    "situations": (("array", SITUATION), False),
    "steps": ("strings", False),
    "language_fact": ("string", False),
    "members_fact": ("string", False),
    "jobs": (("array", JOB), False),
    "config_reads": ("strings", False),
    "notify": (("enums", NOTIFY_TOPICS), False),
    "ui": (("table", UI), False),
    "commands": (("array", COMMAND), False),
    "tools": (("array", TOOL), False),
}
TOP: Table = {
    "id": ("string", True),
    "kinds": (("enums", ("source",)), True),
    "protocol": ("int", True),
    "source": (("table", SOURCE), False),
}

# The key of each array of tables whose value must be unique within the array.
IDENTITY = {
    "facts": "name",
    "effects": "name",
    "events": "name",
    "roles": "name",
    "deliveries": "name",
    "draft_kinds": "name",
    "signals": "name",
    "predicates": "name",
    "marks": "name",
    "situations": "name",
    "jobs": "name",
    "commands": "name",
    "tools": "name",
    "answers": "name",
    "fields": "name",
    "views": "id",
    "facets": "id",
    "buckets": "id",
    "menubar": "id",
}
