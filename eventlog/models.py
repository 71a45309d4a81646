"""The session's event stream as rows: what every writer appends and the SSE stream replays.

Below sessions and jobs, which both write it. The model names the session by label
("play.Session"): an event belongs to a session, but this app imports no sessions module.
The table is still play_sessionevent, where the model lived before it had an app of its own.
"""

from __future__ import annotations

from django.db import models


class SessionEvent(models.Model):
    """The session's event stream; seq is the SSE id, dense per session, for Last-Event-ID replay."""

    session = models.ForeignKey("play.Session", on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=100)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "play_sessionevent"
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="uniq_session_event_seq")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.type}"
