"""Slash commands: "/roll 3 d6 + 2" -> the action and typed arguments per contributes.commands.

Plain Python. Words split like a shell (quotes keep spaces); a variadic last argument of type
string collects the remaining words joined by single spaces, any other variadic type collects a
list of typed values. Errors name the command and the argument.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from catalogue.manifest.types import Manifest, thaw

INTEGER = re.compile(r"^[+-]?\d+$")
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


class CommandError(ValueError):
    """code: unknown-command, missing-argument, invalid-type, invalid-choice, extra-argument, syntax."""

    def __init__(self, message: str, *, code: str, argument: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.argument = argument

    def as_dict(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, "argument": self.argument}


@dataclass(frozen=True)
class ParsedCommand:
    package: str
    name: str  # the command's own name (an alias resolves to it)
    action: str
    args: dict[str, Any]
    raw: str
    context: tuple[str, ...] = ()
    typed: str = ""  # the name as typed: the command's or an alias
    argv: tuple[str, ...] = ()  # the words after it

    def as_ctx(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args, "raw": self.raw}

    def invocation(self, *, invocation_id: str, source: str = "composer") -> dict[str, Any]:
        """Covel's RpcCommandInvocation (plugin-handlers-utils/src/plugin-api.ts, PluginRpcContext
        .command; apps/server .../session/commands.ts): what a command hands its action as the
        payload and as ctx.command: {command, canonical, raw, argv, args, invocationId,
        commandId, source}, plus the hub's earlier `name` (= canonical)."""
        return {
            **self.as_ctx(),
            "command": self.typed or self.name,
            "canonical": self.name,
            "argv": list(self.argv),
            "invocationId": invocation_id,
            "commandId": f"{self.package}:{self.name}",
            "source": source,
        }


def commands_of(manifest: Manifest) -> list[dict[str, Any]]:
    return list(thaw(manifest.contributes.get("commands") or []))


def find_command(
    name: str, manifests: Iterable[Manifest], *, package: str | None = None
) -> tuple[Manifest, dict[str, Any]]:
    """The command called `name` (or an alias), optionally only in `package`."""
    for manifest in manifests:
        if package is not None and manifest.id != package:
            continue
        for command in commands_of(manifest):
            if name == command.get("name") or name in (command.get("aliases") or []):
                return manifest, command
    where = f" in package {package}" if package else " in this session's active packages"
    raise CommandError(f"there is no command /{name}{where}", code="unknown-command")


def _typed(command: str, spec: Mapping[str, Any], word: str) -> Any:
    name = spec["name"]
    kind = spec.get("type", "string")
    if kind == "integer":
        if not INTEGER.match(word):
            raise CommandError(
                f"/{command}: argument {name} must be an integer, not {word!r}",
                code="invalid-type",
                argument=name,
            )
        value: Any = int(word)
    elif kind == "number":
        try:
            value = float(word)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise CommandError(
                f"/{command}: argument {name} must be a number, not {word!r}",
                code="invalid-type",
                argument=name,
            )
        if value.is_integer() and "." not in word and "e" not in word.lower():
            value = int(value)
    elif kind == "boolean":
        lowered = word.lower()
        if lowered not in TRUE_WORDS | FALSE_WORDS:
            raise CommandError(
                f"/{command}: argument {name} must be true or false, not {word!r}",
                code="invalid-type",
                argument=name,
            )
        value = lowered in TRUE_WORDS
    else:
        value = word
    choices = spec.get("choices")
    if choices and str(word) not in [str(c) for c in choices]:
        raise CommandError(
            f"/{command}: argument {name} must be one of {', '.join(map(str, choices))}, not {word!r}",
            code="invalid-choice",
            argument=name,
        )
    return value


def parse_arguments(command: Mapping[str, Any], words: list[str]) -> dict[str, Any]:
    name = str(command["name"])
    specs = list(command.get("arguments") or [])
    args: dict[str, Any] = {}
    position = 0
    for index, spec in enumerate(specs):
        arg = spec["name"]
        last = index == len(specs) - 1
        if spec.get("variadic") and last:
            rest = words[position:]
            position = len(words)
            if not rest:
                if spec.get("required"):
                    raise CommandError(
                        f"/{name}: argument {arg} is required",
                        code="missing-argument",
                        argument=arg,
                    )
                continue
            if spec.get("type", "string") == "string":
                for word in rest:
                    _typed(name, {**spec, "choices": None}, word)
                joined = " ".join(rest)
                _typed(name, spec, joined)  # choices apply to the whole text
                args[arg] = joined
            else:
                args[arg] = [_typed(name, spec, word) for word in rest]
            continue
        if position >= len(words):
            if spec.get("required"):
                raise CommandError(
                    f"/{name}: argument {arg} is required", code="missing-argument", argument=arg
                )
            continue
        args[arg] = _typed(name, spec, words[position])
        position += 1
    if position < len(words):
        extra = " ".join(words[position:])
        raise CommandError(
            f"/{name} takes {len(specs)} argument(s); {extra!r} is one too many",
            code="extra-argument",
        )
    return args


def parse_command(
    text: str, manifests: Iterable[Manifest], *, package: str | None = None
) -> ParsedCommand:
    """Parse a slash command typed by a player against the active packages' commands."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        raise CommandError("a command starts with / and a name, as in /roll 2", code="syntax")
    try:
        words = shlex.split(stripped[1:])
    except ValueError as exc:
        raise CommandError(f"cannot read the command: {exc}", code="syntax") from None
    if not words:
        raise CommandError("a command starts with / and a name, as in /roll 2", code="syntax")
    manifest, command = find_command(words[0], manifests, package=package)
    args = parse_arguments(command, words[1:])
    return ParsedCommand(
        package=manifest.id,
        name=str(command["name"]),
        action=str(command["action"]),
        args=args,
        raw=stripped,
        context=tuple(command.get("context") or ()),
        typed=words[0],
        argv=tuple(words[1:]),
    )
