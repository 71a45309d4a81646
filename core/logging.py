"""Logging helpers: a client's mistake is one log line, not a traceback."""

from __future__ import annotations

import logging


class ClientErrorWithoutTraceback(logging.Filter):
    """Django logs a malformed request (a 400: bad multipart body, too many fields, a bad Host)
    with the exception attached; the traceback says nothing about the server. Keep the line,
    drop the traceback, for any response below 500."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500 and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True
