"""Settings of the Celery workers the job tests start: the project's, plus test runners and
short leases so an orphaned job is found in about a second."""

from __future__ import annotations

import os

from jobs_test_runners import TEST_RUNNERS

from config.settings import *  # noqa: F403
from config.settings import CELERY_BROKER_TRANSPORT_OPTIONS, COVEL_JOB_RUNNERS, REDIS_URL

COVEL_JOB_RUNNERS = {**COVEL_JOB_RUNNERS, **TEST_RUNNERS}
COVEL_JOB_LEASE_SECONDS = float(os.environ.get("COVEL_JOB_LEASE_SECONDS", "1.5"))
COVEL_JOB_ORDER_RETRY_SECONDS = 0.3
COVEL_JOBS_QUEUE = os.environ.get("JOBS_TEST_QUEUE") or None
if not REDIS_URL:
    # The folder broker polls; a test cannot wait a second for each message.
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.02
CELERY_BEAT_SCHEDULE = {"jobs-reap-orphans": {"task": "jobs.reap_orphans", "schedule": 0.5}}
# Beat sends the reaper to the default queue: make it the test's private queue too.
CELERY_TASK_DEFAULT_QUEUE = COVEL_JOBS_QUEUE or "celery"
# A lost message (the folder broker can lose one to a read/write race) is re-sent after 2 s.
COVEL_JOB_RESEND_AFTER_SECONDS = 2
