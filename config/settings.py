"""Covel Hub settings, read from the environment.

Embedded default (nothing to install): SQLite in var/ and a file-system Celery broker.
Real deployments set DATABASE_URL (PostgreSQL) and REDIS_URL (Redis broker and settle notifications).
"""

from __future__ import annotations

from pathlib import Path

from config.env import database_from_url, env_bool, env_int, env_paths, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("COVEL_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "covel-hub-insecure-development-key")
ALLOWED_HOSTS = [
    h for h in env_str("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "ninja",
    "catalogue",
    "approvals",
    "worlds",
    "pluginhost",
    "agents",
    "jobs",
    "sources",
    "sessions.apps.PlayConfig",
    "accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.language.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
COVEL_COMMUNITY_PLUGIN_DIRS = env_paths("COVEL_COMMUNITY_PLUGIN_DIRS")
COVEL_WORLD_DIRS = [BASE_DIR / "world-packages", *env_paths("COVEL_WORLD_DIRS")]
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
# Heap cap of each worker's Node plugin host, in MB; a host over it dies and restarts.
COVEL_PLUGIN_HOST_MEMORY_MB = env_int("COVEL_PLUGIN_HOST_MEMORY_MB", 256)
# The spec's 30 s limit of an RPC action; tests lower it.
COVEL_PLUGIN_RPC_TIMEOUT_MS = env_int("COVEL_PLUGIN_RPC_TIMEOUT_MS", 30000)
# Tests serve HTTPS on loopback; production never lets plugin code reach private addresses.
COVEL_HTTP_ALLOW_PRIVATE = env_bool("COVEL_HTTP_ALLOW_PRIVATE", False)

# --- Detached jobs (jobs/, docs/jobs.md) ----------------------------------------------------
# A worker renews a running job's lease every third of this; the reaper orphans a job whose
# lease expired (its worker died), so a dead worker holds up settle waits for about this long.
COVEL_JOB_LEASE_SECONDS = env_int("COVEL_JOB_LEASE_SECONDS", 30)
# How often Celery beat runs jobs.reap_orphans (orphans expired leases, re-sends lost messages).
COVEL_JOB_REAP_INTERVAL_SECONDS = env_int("COVEL_JOB_REAP_INTERVAL_SECONDS", 10)
# A queued job nobody claimed for this long gets its message re-sent (then 2x, 4x ... later).
COVEL_JOB_RESEND_AFTER_SECONDS = env_int("COVEL_JOB_RESEND_AFTER_SECONDS", 60)
# The longest any job may run (a larger maxExecutionMs is clamped): below the visibility timeout.
COVEL_JOB_EXECUTION_CEILING_MS = env_int("COVEL_JOB_EXECUTION_CEILING_MS", 1_800_000)
# Optional dedicated Celery queue for job messages (empty: Celery's default queue).
COVEL_JOBS_QUEUE = env_str("COVEL_JOBS_QUEUE")

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
    CELERY_BROKER_URL = "filesystem://"
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
}
CELERY_TIMEZONE = "UTC"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
