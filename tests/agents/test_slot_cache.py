"""Where the cache is shared (Redis), a turn reads the model slots from it, and a staff change
to a slot shows on the next read."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import ModelSlot
from agents.selectors import SLOTS_CACHE_KEY, endpoint_for_slot, slots_forget

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_cache(settings, redis_url):
    # Django's setting_changed receiver rebuilds the cache handlers for the new CACHES.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}
    }
    slots_forget()
    yield
    slots_forget()


def test_slots_come_from_the_shared_cache_and_a_save_refreshes_them(redis_cache):
    slot = ModelSlot.objects.create(name="story", base_url="http://127.0.0.1:9/v1", model="one")
    assert endpoint_for_slot(slot="story").model == "one"  # read, then kept in Redis
    assert cache.get(SLOTS_CACHE_KEY) is not None
    with CaptureQueriesContext(connection) as queries:
        assert endpoint_for_slot(slot="story").model == "one"
    assert len(queries) == 0
    slot.model = "two"
    slot.save()  # staff change the slot: the cached set is dropped
    assert cache.get(SLOTS_CACHE_KEY) is None
    assert endpoint_for_slot(slot="story").model == "two"
    slot.delete()
    with pytest.raises(Exception, match="no model is configured"):
        endpoint_for_slot(slot="story")


def test_without_a_shared_cache_every_read_asks_the_database(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    ModelSlot.objects.create(name="story", base_url="http://127.0.0.1:9/v1", model="one")
    with CaptureQueriesContext(connection) as queries:
        endpoint_for_slot(slot="story")
    assert len(queries) == 1
