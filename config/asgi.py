"""The ASGI entry point: uvicorn serves `config.asgi:application` (scripts/run.sh, docs/deploy.md).

ASGI rather than WSGI so an open event stream is a coroutine waiting on a notification, not a
thread (sessions/events.py)."""

import os
import warnings

from django.core.asgi import get_asgi_application

# whitenoise's file responses iterate synchronously; Django reads the (small, compressed)
# static file into memory once per request and says so each time. Event streams are async.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()
