"""Errors of the session core, as values with a stable code (no Django)."""

from __future__ import annotations

from eventlog.errors import SessionProblem


class OperationError(ValueError):
    """A list of plugin-data operations cannot apply to a value.

    code:  stable kebab-case rule code ("out-of-range", "type-mismatch", ...).
    index: the position of the failing op in its list (None for the list as a whole).
    path:  the JSON pointer into the stored value where the op failed ("" for the value itself).
    """

    def __init__(
        self, code: str, message: str, *, index: int | None = None, path: str = ""
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.index = index
        self.path = path

    def __str__(self) -> str:
        where = f"op {self.index}" if self.index is not None else "ops"
        at = f" at {self.path}" if self.path else ""
        return f"{where}{at}: {self.message} [{self.code}]"


class WriteRefused(ValueError):
    """A plugin-data write is refused; the message names plugin, namespace and key."""

    def __init__(
        self, *, plugin: str, namespace: str, key: str, code: str, message: str, path: str = ""
    ) -> None:
        super().__init__(f"{plugin}/{namespace}/{key}: {message} [{code}]")
        self.plugin = plugin
        self.namespace = namespace
        self.key = key
        self.code = code
        self.message = message
        self.path = path

    def as_dict(self) -> dict[str, str]:
        return {
            "plugin": self.plugin,
            "namespace": self.namespace,
            "key": self.key,
            "code": self.code,
            "message": str(self),
            "path": self.path,
        }


# Refusals the API shows as {"detail", "code"} with an HTTP status (SessionProblem).


class SessionBusy(SessionProblem):
    code = "session_busy"


class SessionNotActive(SessionProblem):
    code = "session_not_active"


class FormRejected(SessionProblem):
    """A submission the form's checks or its validator refused: nothing stored, no turn."""

    status = 422
    code = "form_rejected"
