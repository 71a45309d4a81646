"""What scripts/run.sh prints on a normal start and Ctrl-C: where the hub runs and the next step
(create an admin), warnings and errors only, and none of the noise it used to print: kombu's
"No hostname was supplied", the periodic tasks' received/succeeded lines, an ERROR on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_run_script import start, stop_and_check

# Its servers are its own (or the embedded default): the same in both passes of scripts/test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.first_pass_only]


def test_run_sh_says_where_it_runs_and_what_to_do_next_and_nothing_noisy(tmp_path):
    var = tmp_path / "covel-run-output"
    var.mkdir()
    # A migrated database, as the install steps leave it (start() skips them).
    env = {**os.environ, "COVEL_VAR_DIR": str(var)}
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(
        [str(repo / ".venv/bin/python"), "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=repo,
        env=env,
        check=True,
        timeout=300,
    )
    proc = start(var, 8733)
    time.sleep(7)  # beat's 5-second tasks have run at least once
    stop_and_check(proc, var, signal.SIGINT)
    log = (var / "run.log").read_text()
    assert "Covel Hub runs at http://127.0.0.1:8733/" in log
    assert "next: create an admin with  .venv/bin/python manage.py createsuperuser" in log
    assert "No hostname was supplied" not in log
    assert "sources.dispatch_jobs" not in log and "succeeded in" not in log
    assert "ERROR" not in log and "Traceback" not in log
    assert "objects imported automatically" not in log
