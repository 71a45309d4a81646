"""Per-user limits on the endpoints that spend model calls or start turns (settings.COVEL_*_RATE).

One scope for every such endpoint, so switching endpoints does not reset a user's budget. The
counts live in Django's cache: Redis when REDIS_URL is set (shared by every web process), this
process's memory on the embedded default."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import SimpleRateThrottle


class TurnThrottle(SimpleRateThrottle):
    scope = "turns"

    def __init__(self) -> None:
        super().__init__(self._setting())

    @staticmethod
    def _setting() -> str:
        return getattr(settings, "COVEL_TURN_RATE", "30/m")

    def allow_request(self, request: HttpRequest) -> bool:
        # The rate is read per request, so a changed setting applies without a restart of tests.
        if self.rate != self._setting():
            self.rate = self._setting()
            self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        user = request.user
        ident = user.pk if user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


turn_throttle = TurnThrottle()
