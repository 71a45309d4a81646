"""Errors of the plugin host. Every one carries a stable code the callers and the API can show."""

from __future__ import annotations

from typing import Any


class PluginHostError(Exception):
    """A plugin call or load failed. code is stable (snake_case); details is plain JSON data."""

    code: str = "plugin_failed"

    def __init__(self, message: str, *, code: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        if code:
            self.code = code
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"


class PluginLoadError(PluginHostError):
    """The entry module or a handler could not be loaded, or registrations do not match."""

    code = "plugin_load_failed"


class PluginCallError(PluginHostError):
    """A tool, action, handler or validator failed."""


class PluginTimeout(PluginCallError):
    """The call ran past its limit (the host answered, or was killed because it did not)."""

    code = "plugin_timeout"


class HostCrashed(PluginCallError):
    """The Node process died or was killed; it restarts on the next call."""

    code = "host_crashed"


class ToolFailure(PluginCallError):
    """A tool refused: invalid_tool_arguments (zod), tool_error (a ToolError, with tool_code/hint)."""

    code = "tool_error"

    @property
    def tool_code(self) -> str | None:
        return self.details.get("code") if isinstance(self.details, dict) else None

    @property
    def hint(self) -> str | None:
        return self.details.get("hint") if isinstance(self.details, dict) else None


class ExtensionFailure(PluginCallError):
    """An extension provider failed: extension_not_found, extension_input_invalid,
    extension_output_invalid (per-path details), or the plugin's own error."""

    code = "extension_failed"


EXTENSION_CODES = {"extension_not_found", "extension_input_invalid", "extension_output_invalid"}


class CallbackRefused(Exception):
    """Raised by a HostCallbacks method to refuse a ctx call; the plugin sees code and message.

    hint (optional) reaches a refused builtin tool's ToolError as its own field.
    """

    def __init__(
        self, message: str, *, code: str = "host_capability_refused", hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


LOAD_CODES = {
    "plugin_registration_invalid",
    "plugin_import_refused",
    "entry_invalid",
    "entry_failed",
    "entry_timeout",
    "entry_not_found",
    "entry_outside_package",
    "handler_invalid",
    "host_capability_refused",
    "module_not_found",
    "module_syntax_error",
    "module_failed",
    "extension_point_unknown",
    "extension_point_unsupported",
}


def error_from_frame(error: dict[str, Any], *, during_load: bool = False) -> PluginHostError:
    """Turn the host's {code, message, details} into the matching Python exception."""
    code = str(error.get("code") or "plugin_failed")
    message = str(error.get("message") or code)
    details = error.get("details")
    if code == "plugin_timeout":
        return PluginTimeout(message, details=details)
    if code in {"invalid_tool_arguments", "tool_error", "tool_failed"}:
        return ToolFailure(message, code=code, details=details)
    if code in EXTENSION_CODES:
        return ExtensionFailure(message, code=code, details=details)
    if during_load or code in LOAD_CODES:
        # A refused import surfaces as a failed import of the entry; keep the precise code.
        if "plugin_import_refused" in message or "is refused:" in message:
            code = "plugin_import_refused"
        return PluginLoadError(message, code=code, details=details)
    return PluginCallError(message, code=code, details=details)
