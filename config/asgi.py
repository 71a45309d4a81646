"""The ASGI entry point: uvicorn serves `config.asgi:application` (scripts/run.sh, docs/deploy.md).

ASGI rather than WSGI so an open event stream is a coroutine waiting on a notification, not a
thread (sessions/events.py)."""

import gc
import os
import warnings

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

# whitenoise's file responses iterate synchronously; Django reads the (small, compressed)
# static file into memory once per request and says so each time. Event streams are async.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

# Every view imported now, then what start-up made (modules, classes, functions: most of the
# heap) is moved out of the garbage collector's sight. A web process lives long and holds many
# open streams; a full collection walking all of it took 30-120 ms, during which no stream was
# written (the tail of bench/streams.py's latency at 1,000 streams).
get_resolver().url_patterns  # noqa: B018 (the import is the point)
gc.collect()
gc.freeze()
