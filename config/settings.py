"""Covel Hub settings, read from the environment.

Embedded default (nothing to install): SQLite in var/ and a file-system Celery broker.
Real deployments set DATABASE_URL (PostgreSQL) and REDIS_URL (Redis broker and settle notifications).
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_paths, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("COVEL_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# The test suite (pytest) runs with DEBUG off, on a throw-away key and unhashed static files.
_TESTING = "pytest" in sys.modules


def _secret_key() -> str:
    """SECRET_KEY, else the file SECRET_KEY_FILE names (scripts/run.sh writes var/secret_key
    on the embedded default); only DEBUG may run on the well-known development key."""
    key = env_str("SECRET_KEY")
    if key:
        return key
    path = Path(env_str("SECRET_KEY_FILE", str(VAR_DIR / "secret_key")))
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    if DEBUG or _TESTING:
        return "covel-hub-insecure-development-key"
    raise ImproperlyConfigured(
        "SECRET_KEY is not set: with DEBUG off the hub needs a secret key. Set SECRET_KEY (50+ "
        f"random characters) or SECRET_KEY_FILE, or write one into {path} (scripts/run.sh does)."
    )


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [
    h for h in env_str("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# --- HTTPS (docs/deploy.md) -----------------------------------------------------------------
# COVEL_HTTPS=true: the hub is reached over HTTPS only (usually a proxy terminating TLS that
# sets X-Forwarded-Proto). Cookies are then secure, HTTP redirects to HTTPS, and HSTS is sent.
COVEL_HTTPS = env_bool("COVEL_HTTPS", False)
if env_bool("COVEL_BEHIND_PROXY", COVEL_HTTPS):
    # Trust the proxy's word on the scheme; only safe when the proxy strips the client's own.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = COVEL_HTTPS
SECURE_SSL_REDIRECT = COVEL_HTTPS
# /healthz answers the load balancer over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if COVEL_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", COVEL_HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", COVEL_HTTPS)
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Scripts only from our own origin, no inline code (docs/deploy.md); SSE and fetch go to self.
CONTENT_SECURITY_POLICY = env_str(
    "COVEL_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; "
    "form-action 'self'",
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "ninja",
    "accounts",
    "catalogue",
    "approvals",
    "worlds",
    "pluginhost",
    "agents",
    "eventlog",
    "jobs",
    "sources",
    "sessions.apps.PlayConfig",
    "installs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware",
    # Before sign-in: a storm of event-stream starts queues here, not for database connections.
    "sessions.stream_limits.StreamStartMiddleware",
    # Right after security: static files are answered before sessions or auth are looked at.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Authorization: Bearer <token> on /api/ acts as the token's owner (accounts/).
    "accounts.middleware.BearerTokenMiddleware",
    "accounts.language.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.api_nul_guard",
    "core.middleware.DatabaseBusyMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL"), sqlite_default=VAR_DIR / "hub.sqlite3")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Rate limits (accounts/): counts live in the cache below. Turns and model calls per user, over
# every endpoint that starts one; failed sign-ins per account and per address.
# (The suite plays hundreds of turns a minute as the same few users: its default is no limit.)
COVEL_TURN_RATE = env_str("COVEL_TURN_RATE", "100000/s" if _TESTING else "30/m")
# Per (account, address) pair, not per account: a per-account count lets a stranger lock the
# owner out (accounts/limits.py). The old variable name is still read.
COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = env_int(
    "COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS", env_int("COVEL_LOGIN_FAILURES_PER_ACCOUNT", 5)
)
COVEL_LOGIN_FAILURES_PER_ADDRESS = env_int("COVEL_LOGIN_FAILURES_PER_ADDRESS", 20)
COVEL_LOGIN_FAILURE_WINDOW_SECONDS = env_int("COVEL_LOGIN_FAILURE_WINDOW_SECONDS", 900)
if env_str("REDIS_URL"):
    # Shared by every web process, so a limit holds however many processes serve.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": env_str("CACHE_URL", env_str("REDIS_URL")),
        }
    }
    # The signed-in session is read from Redis, not queried per request; writes go to both, so
    # a flushed cache costs one query per session, never a sign-out.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
else:
    # A per-process cache would keep a signed-out session alive in the other processes: the
    # session stays in the database alone.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Mail: password reset needs it, so it is offered only when EMAIL_HOST is set.
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "covel-hub@localhost")

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en"
# The hub's own interface; package text may come in any locale a package ships (docs/catalogue.md).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# whitenoise serves STATIC_ROOT (filled by collectstatic in scripts/run.sh): names carry a hash
# of the content, files are pre-compressed (gzip, brotli), and hashed names are cached for a
# year. COVEL_STATIC_MANIFEST=false (the test suite) serves from the app folders unhashed.
_STATIC_MANIFEST = env_bool("COVEL_STATIC_MANIFEST", not _TESTING)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if _STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not _STATIC_MANIFEST
# htmx comes from npm (package.json), never copied into the repository.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", BASE_DIR / "node_modules" / "htmx.org" / "dist"),
]

# --- Packages -------------------------------------------------------------------------------
# Trust comes from where a package is found: the bundled folder is trusted, every other folder
# (the user's ~/.covel/plugins, extra community folders) holds community code that needs approval.
COVEL_BUNDLED_PLUGINS_DIR = Path(env_str("COVEL_BUNDLED_PLUGINS_DIR", str(BASE_DIR / "plugins")))
COVEL_USER_PLUGINS_DIR = Path(env_str("COVEL_USER_PLUGINS_DIR", "~/.covel/plugins")).expanduser()
# Packages installed from the web or `manage.py plugin_install` (installs/): community code,
# read after the configured community folders, so a copied folder keeps its id.
COVEL_INSTALLED_PLUGINS_DIR = Path(
    env_str("COVEL_INSTALLED_PLUGINS_DIR", str(VAR_DIR / "installed-plugins"))
)
COVEL_COMMUNITY_PLUGIN_DIRS = [
    *env_paths("COVEL_COMMUNITY_PLUGIN_DIRS"),
    COVEL_INSTALLED_PLUGINS_DIR,
]
# Worlds installed with a collection (installs/, as Covel installs a collection's worlds): read
# last, so a bundled or configured world keeps its id.
COVEL_INSTALLED_WORLDS_DIR = Path(
    env_str("COVEL_INSTALLED_WORLDS_DIR", str(VAR_DIR / "installed-worlds"))
)
COVEL_WORLD_DIRS = [
    BASE_DIR / "world-packages",
    *env_paths("COVEL_WORLD_DIRS"),
    COVEL_INSTALLED_WORLDS_DIR,
]
COVEL_SOURCE_PLUGIN_DIRS = [BASE_DIR / "source-plugins", *env_paths("COVEL_SOURCE_PLUGIN_DIRS")]
# The Covel host version this hub stands in for when checking a package's `covel` range.
COVEL_HOST_VERSION = env_str("COVEL_HOST_VERSION", "0.1.0")
# The package that narrates (provides narrative-engine@2) once staff configure a story model slot;
# until then the bundled function narrator does. Empty: only when a session requests it.
COVEL_STORY_AGENT = env_str("COVEL_STORY_AGENT", "story-agent")
# Extra model slot names beyond story, plugin, utility and memory, comma-separated.
COVEL_MODEL_SLOTS = [s for s in env_str("COVEL_MODEL_SLOTS", "").split(",") if s]
# A PEM CA bundle that replaces the system trust store for covel.http; tests only.
COVEL_HTTP_CA_BUNDLE = env_str("COVEL_HTTP_CA_BUNDLE", "") or None
# Largest response body covel.http accepts.
COVEL_HTTP_MAX_RESPONSE_BYTES = env_int("COVEL_HTTP_MAX_RESPONSE_BYTES", 5 * 1024 * 1024)
# The configuration source plugins read (every_from, config_reads); Go duration strings. Its
# keys and tables are what config_reads may name: the host's tables the spec names exist, empty,
# so a plugin may read them (the bundled localfeed reads "sweep") before an operator sets a value.
COVEL_SOURCE_CONFIG: dict = {"sweep": {}, "items": {}, "turns": {}}
# A source job's run limit when its manifest names no timeout.
COVEL_SOURCE_JOB_TIMEOUT = env_str("COVEL_SOURCE_JOB_TIMEOUT", "60s")
# Memory of each Node plugin host for plugin code, in MB: the V8 heap cap, and with Node's own
# 128 MB the cap of the whole process's resident memory (heap and buffers); over it the host is
# stopped and restarts on its next call.
COVEL_PLUGIN_HOST_MEMORY_MB = env_int("COVEL_PLUGIN_HOST_MEMORY_MB", 256)
# A community package's host (one per package version) stops after this long without a call.
COVEL_PLUGIN_HOST_IDLE_SECONDS = env_int("COVEL_PLUGIN_HOST_IDLE_SECONDS", 300)
# Community hosts one worker process keeps at once; past it the least recently used idle one stops.
COVEL_PLUGIN_COMMUNITY_HOSTS = env_int("COVEL_PLUGIN_COMMUNITY_HOSTS", 16)
# Community hosts start in an empty network namespace: "auto" where Linux allows it (root, or
# unprivileged user namespaces), "require" to refuse starting without one, "off" never.
COVEL_PLUGIN_HOST_NETNS = env_str("COVEL_PLUGIN_HOST_NETNS", "auto")
# The largest JSON a plugin call may return (and a host callback may carry); bigger is refused.
COVEL_PLUGIN_MAX_RESULT_BYTES = env_int("COVEL_PLUGIN_MAX_RESULT_BYTES", 8 * 1024 * 1024)
# Log lines per second per package (bursts of twice that); the rest are counted and dropped.
COVEL_PLUGIN_LOG_LINES_PER_S = env_int("COVEL_PLUGIN_LOG_LINES_PER_S", 200)
# The spec's 30 s limit of an RPC action; tests lower it.
COVEL_PLUGIN_RPC_TIMEOUT_MS = env_int("COVEL_PLUGIN_RPC_TIMEOUT_MS", 30000)
# Covel's extension provider limits (500 ms, 60 s for history.compact@2) are multiplied by
# this percentage: a slow machine may raise it. docs/plugin-host.md, Extension providers.
COVEL_EXTENSION_TIMEOUT_PERCENT = env_int("COVEL_EXTENSION_TIMEOUT_PERCENT", 100)
# The context window, in estimated tokens, that history.compact@2 keeps the agent prompt under
# (compaction starts past 60% of it). docs/play.md, Extension points.
COVEL_HISTORY_CONTEXT_TOKENS = env_int("COVEL_HISTORY_CONTEXT_TOKENS", 128000)
# Tests serve HTTPS on loopback; production never lets plugin code reach private addresses.
COVEL_HTTP_ALLOW_PRIVATE = env_bool("COVEL_HTTP_ALLOW_PRIVATE", False)

# --- Detached jobs (jobs/, docs/jobs.md) ----------------------------------------------------
# A worker renews a running job's lease every third of this; the reaper orphans a job whose
# lease expired (its worker died), so a dead worker holds up settle waits for about this long.
COVEL_JOB_LEASE_SECONDS = env_int("COVEL_JOB_LEASE_SECONDS", 30)
# A job whose worker died is handed to another worker this many times (docs/jobs.md, Workers
# that die), then marked orphaned.
COVEL_JOB_MAX_RERUNS = env_int("COVEL_JOB_MAX_RERUNS", 2)
# How often Celery beat runs jobs.reap_orphans (orphans expired leases, re-sends lost messages).
COVEL_JOB_REAP_INTERVAL_SECONDS = env_int("COVEL_JOB_REAP_INTERVAL_SECONDS", 10)
# A queued job nobody claimed for this long gets its message re-sent (then 2x, 4x ... later).
COVEL_JOB_RESEND_AFTER_SECONDS = env_int("COVEL_JOB_RESEND_AFTER_SECONDS", 60)
# The longest any job may run (a larger maxExecutionMs is clamped): below the visibility timeout.
COVEL_JOB_EXECUTION_CEILING_MS = env_int("COVEL_JOB_EXECUTION_CEILING_MS", 1_800_000)
# Optional dedicated Celery queue for job messages (empty: Celery's default queue).
COVEL_JOBS_QUEUE = env_str("COVEL_JOBS_QUEUE")
# More job runner kinds by dotted path (RuntimeJob.runner -> callable). The turn's "runtime"
# runner and the session check are registered by sessions at start-up (jobs/runners.py).
COVEL_JOB_RUNNERS: dict[str, str] = {}

# --- Celery ---------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        # Longer than the longest job (maxExecutionMs is capped well below this), so Redis never
        # redelivers a message whose job is still running on a live worker.
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    }
else:
    # A broker made of folders: the web process and the worker share it with no server running.
    _broker_dir = VAR_DIR / "celery-broker"
    for _sub in ("out", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    # A host name, though the folder broker ignores it: without one kombu warns "No hostname was
    # supplied" in every process that connects.
    CELERY_BROKER_URL = "filesystem://localhost/"
    # kombu's file-system transport with atomic message writes (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # The folder broker polls once a second by default: a second added to every job.
        "polling_interval": 0.1,
        # Broadcast exchanges (worker control) live here too, not in the current directory.
        "control_folder": str(_broker_dir / "control"),
    }
# The job row in the database is the truth about a job; Celery results are not kept.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
# Acknowledge after the task ran, so a worker that dies mid-job does not lose the message ...
CELERY_TASK_ACKS_LATE = True
# ... and give it back to the broker when the worker process is killed.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One message at a time per worker process: long jobs never hide queued ones behind them.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# When the broker connection drops, Redis redelivers unacked messages anyway: stop the running
# copies rather than let two run (the job's claim protects the row, this protects CPU and bills).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# Celery's Django fixup otherwise closes the database connection before and after every task;
# a reconnect per job costs more than a short job (about 2x jobs/s on PostgreSQL, bench/jobs.py).
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 100)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE: dict = {
    # Orphans jobs whose lease expired and re-sends lost messages (jobs/services.py).
    "jobs-reap-orphans": {
        "task": "jobs.reap_orphans",
        "schedule": float(COVEL_JOB_REAP_INTERVAL_SECONDS),
    },
    # Starts due source-plugin jobs (sources/services.py); a job starts at most 5 s late.
    "sources-dispatch-jobs": {"task": "sources.dispatch_jobs", "schedule": 5.0},
    # Looks for newer commits of packages installed from git (installs/tasks.py).
    "installs-check-updates": {
        "task": "installs.check_updates",
        "schedule": float(env_int("COVEL_INSTALL_CHECK_SECONDS", 6 * 3600)),
    },
}
CELERY_TIMEZONE = "UTC"
# Beat's schedule state lives with the hub's other state, not in the checkout (run.sh passes it).
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Event streams and notifications (sessions/events.py, core/notify.py) ------------------
# "push": streams wait on a notification (default); "poll": the old thread-per-stream design
# that reads the database every 200 ms, kept so bench/streams.py can measure it beside.
COVEL_EVENT_STREAM = env_str("COVEL_EVENT_STREAM", "push")
# Per web process (sessions/stream_limits.py, docs/deploy.md): open streams per user and per
# session (past a cap the oldest is closed), open streams in all (past it: 503), and stream
# starts at a time (sign-in, session check, replay: each wants a database connection; past
# the wait: 503 with Retry-After, which EventSource obeys). 0 means no cap.
COVEL_STREAMS_PER_USER = env_int("COVEL_STREAMS_PER_USER", 20)
COVEL_STREAMS_PER_SESSION = env_int("COVEL_STREAMS_PER_SESSION", 5000)
COVEL_STREAMS_MAX = env_int("COVEL_STREAMS_MAX", 8000)
COVEL_STREAM_STARTS = env_int("COVEL_STREAM_STARTS", 64)
COVEL_STREAM_START_WAIT_SECONDS = env_int("COVEL_STREAM_START_WAIT_SECONDS", 10)
COVEL_STREAM_RETRY_SECONDS = env_int("COVEL_STREAM_RETRY_SECONDS", 5)
# "local" (this machine's processes), "redis" (every process behind REDIS_URL), "postgres"
# (LISTEN/NOTIFY); empty: redis when REDIS_URL is set, else postgres on PostgreSQL, else local.
COVEL_NOTIFY_BACKEND = env_str("COVEL_NOTIFY_BACKEND")
COVEL_NOTIFY_REDIS_URL = env_str("COVEL_NOTIFY_REDIS_URL")
# Where the local backend's processes bind their wake-up sockets.
COVEL_NOTIFY_DIR = env_str("COVEL_NOTIFY_DIR", str(VAR_DIR / "notify"))

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "filters": {"client_errors": {"()": "core.logging.ClientErrorWithoutTraceback"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Beat says "Scheduler: Sending due task" every few seconds: chatter, at debug only.
        "celery.beat": {"level": env_str("BEAT_LOG_LEVEL", "WARNING")},
        # One line per request from the server; the hub logs what matters itself.
        "uvicorn.access": {"level": env_str("ACCESS_LOG_LEVEL", "WARNING")},
        # 4xx lines (no traceback: core.logging) at WARNING, server errors at ERROR.
        "django.request": {"level": env_str("REQUEST_LOG_LEVEL", "WARNING")},
    },
}
