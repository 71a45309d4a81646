"""PLUGIN.md's `contributes`: tools, events, services, commands, forms, hooks, UI, and the
settings panel (`contributes.settings`).
"""

from __future__ import annotations

from typing import Any

from catalogue.manifest.context import PLUGIN_FILE, Context
from catalogue.manifest.rules.agent import declared_namespaces
from catalogue.manifest.rules.common import (
    BASE_ACTION_KINDS,
    as_dict,
    as_list,
    check_contract,
    declared,
    entries,
    items,
)
from catalogue.manifest.rules.data import check_data, check_datasets
from core.pointer import join


def check_contributes(ctx: Context) -> None:
    f = PLUGIN_FILE
    c = as_dict(ctx.data.get("contributes"))
    base = "/contributes"
    actions = declared(c.get("actions"))

    names_seen: dict[str, str] = {}
    for i, command in items(c.get("commands")):
        command = as_dict(command)
        action = command.get("action")
        if isinstance(action, str) and actions is not None and action not in actions:
            ctx.error(
                f,
                f"{base}/commands/{i}/action",
                "command-action-undeclared",
                f"the command's action {action!r} is not listed in contributes.actions",
            )
        for key, where in [("name", f"{base}/commands/{i}/name")] + [
            (j, f"{base}/commands/{i}/aliases/{j}")
            for j in range(len(as_list(command.get("aliases"))))
        ]:
            name = command.get("name") if key == "name" else as_list(command.get("aliases"))[key]
            if not isinstance(name, str):
                continue
            if name in names_seen:
                ctx.error(
                    f,
                    where,
                    "duplicate-command",
                    f"/{name} is already declared at {names_seen[name]}",
                )
            else:
                names_seen[name] = where
        arguments = as_list(command.get("arguments"))
        argument_names: set[str] = set()
        for j, argument in items(arguments):
            argument = as_dict(argument)
            name = argument.get("name")
            if isinstance(name, str):
                if name in argument_names:
                    ctx.error(
                        f,
                        f"{base}/commands/{i}/arguments/{j}/name",
                        "duplicate-argument",
                        f"the argument name {name!r} is used twice",
                    )
                argument_names.add(name)
            if argument.get("variadic") is True and j != len(arguments) - 1:
                ctx.error(
                    f,
                    f"{base}/commands/{i}/arguments/{j}/variadic",
                    "variadic-not-last",
                    "only the last argument can be variadic",
                )

    kinds_seen: set[str] = set()
    for i, kind in items(c.get("actionKinds")):
        kind = as_dict(kind)
        name = kind.get("name")
        if isinstance(name, str):
            if name in BASE_ACTION_KINDS:
                ctx.error(
                    f,
                    f"{base}/actionKinds/{i}/name",
                    "action-kind-reserved",
                    f"{name!r} is a base action kind; choose another name",
                )
            elif name in kinds_seen:
                ctx.error(
                    f,
                    f"{base}/actionKinds/{i}/name",
                    "duplicate-action-kind",
                    f"the action kind {name!r} is declared twice",
                )
            kinds_seen.add(name)
        if "schema" in kind:
            ctx.check_path(kind.get("schema"), file=f, path=f"{base}/actionKinds/{i}/schema")

    for i, service in items(c.get("services")):
        if isinstance(service, dict):
            check_contract(
                ctx, service.get("contract"), file=f, path=f"{base}/services/{i}/contract"
            )
        else:
            check_contract(ctx, service, file=f, path=f"{base}/services/{i}")

    topics: set[str] = set()
    for i, event in items(c.get("events")):
        event = as_dict(event)
        topic = event.get("topic")
        if isinstance(topic, str):
            if topic in topics:
                ctx.error(
                    f,
                    f"{base}/events/{i}/topic",
                    "duplicate-event-topic",
                    f"the event {topic!r} is declared twice",
                )
            topics.add(topic)
        ctx.check_path(event.get("schema"), file=f, path=f"{base}/events/{i}/schema")

    _check_settings(ctx, c.get("settings"))
    check_datasets(ctx, c.get("datasets"))
    check_data(ctx, c.get("data"))

    ui = as_dict(c.get("ui"))
    for placement, paths in ui.items():
        for i, spec in items(paths):
            ctx.check_path(spec, file=f, path=join(f"{base}/ui", placement, i))

    # watch names the package's own namespaces (spec); every plugin.data namespace is the package's
    # own, declared or not, and Covel's packages watch undeclared ones. So it is a note, not an error.
    namespaces = declared_namespaces(c)
    for i, extension in items(c.get("extensions")):
        for j, namespace in items(as_dict(extension).get("watch")):
            if (
                isinstance(namespace, str)
                and namespaces is not None
                and namespace not in namespaces
            ):
                ctx.warn(
                    f,
                    f"{base}/extensions/{i}/watch/{j}",
                    "namespace-undeclared",
                    f"watch names {namespace!r}, which contributes.data does not declare; the slot "
                    "refreshes when this package writes it, but no schema describes it",
                )
    for name, projection in entries(c.get("worldProjections")):
        projection = as_dict(projection)
        ctx.check_path(
            projection.get("handler"),
            file=f,
            path=join(f"{base}/worldProjections", name, "handler"),
        )
        for out_id, output in entries(projection.get("outputs")):
            namespace = as_dict(output).get("namespace")
            if (
                isinstance(namespace, str)
                and namespaces is not None
                and namespace not in namespaces
            ):
                ctx.error(
                    f,
                    join(f"{base}/worldProjections", name, "outputs", out_id, "namespace"),
                    "namespace-undeclared",
                    f"{namespace!r} is not one of this package's data namespaces (contributes.data or datasets)",
                )

    prompt_ids: set[str] = set()
    for i, segment in items(c.get("prompt")):
        segment_id = as_dict(segment).get("id")
        if isinstance(segment_id, str):
            if segment_id in prompt_ids:
                ctx.error(
                    f,
                    f"{base}/prompt/{i}/id",
                    "duplicate-prompt-id",
                    f"the prompt segment {segment_id!r} is declared twice",
                )
            prompt_ids.add(segment_id)


_NUMERIC_SETTINGS = ("number", "integer", "slider")
_SETTING_TYPES = ("text", "textarea", "number", "integer", "toggle", "select", "slider", "slot")


def _check_settings(ctx: Context, settings: Any) -> None:
    f = PLUGIN_FILE
    keys: set[str] = set()
    for i, setting in items(settings):
        setting = as_dict(setting)
        where = f"/contributes/settings/{i}"
        key = setting.get("key")
        if isinstance(key, str):
            if key in keys:
                ctx.error(
                    f,
                    f"{where}/key",
                    "duplicate-setting-key",
                    f"the setting key {key!r} is used twice",
                )
            keys.add(key)
        kind = setting.get("type")
        options = as_list(setting.get("options"))
        values = [as_dict(o).get("value") for o in options]
        if kind == "select":
            if not options:
                ctx.error(
                    f,
                    f"{where}/options",
                    "select-needs-options",
                    "a select setting needs at least one option",
                )
            seen: set[str] = set()
            for j, value in enumerate(values):
                if not isinstance(value, str):
                    continue
                if value in seen:
                    ctx.error(
                        f,
                        f"{where}/options/{j}/value",
                        "duplicate-option",
                        f"the option {value!r} is listed twice",
                    )
                seen.add(value)
        if kind in _SETTING_TYPES:
            if "options" in setting and kind != "select":
                ctx.error(
                    f,
                    f"{where}/options",
                    "setting-field-not-allowed",
                    f"options belong to select settings, not {kind}",
                )
            for bound in ("min", "max", "step"):
                if bound in setting and kind not in _NUMERIC_SETTINGS:
                    ctx.error(
                        f,
                        f"{where}/{bound}",
                        "setting-field-not-allowed",
                        f"{bound} applies to numeric controls (number, integer, slider), not {kind}",
                    )
        minimum, maximum = setting.get("min"), setting.get("max")
        numeric = (int, float)
        if (
            isinstance(minimum, numeric)
            and isinstance(maximum, numeric)
            and not isinstance(minimum, bool)
            and minimum > maximum
        ):
            ctx.error(
                f, f"{where}/min", "setting-range-invalid", f"min {minimum} is above max {maximum}"
            )
        if "default" not in setting or kind is None:
            continue
        default = setting["default"]
        problem = None
        if kind == "select" and options and default not in values:
            problem = f"the default {default!r} is not one of the options"
        elif kind in _NUMERIC_SETTINGS:
            if not isinstance(default, numeric) or isinstance(default, bool):
                problem = "the default of a numeric setting must be a number"
            elif kind == "integer" and not isinstance(default, int):
                problem = "the default of an integer setting must be a whole number"
            elif (
                isinstance(minimum, numeric)
                and default < minimum
                or isinstance(maximum, numeric)
                and default > maximum
            ):
                problem = f"the default {default} lies outside min..max"
        elif kind == "toggle" and not isinstance(default, bool):
            problem = "the default of a toggle must be true or false"
        elif kind in ("text", "textarea", "slot") and not isinstance(default, str):
            problem = f"the default of a {kind} setting must be a string"
        if problem:
            ctx.error(f, f"{where}/default", "setting-default-invalid", problem)
