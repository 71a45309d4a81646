from django.apps import AppConfig


class PlayConfig(AppConfig):
    # django.contrib.sessions owns the label "sessions"; ours is "play".
    name = "sessions"
    label = "play"
    verbose_name = "Play sessions"

    def ready(self) -> None:
        # The jobs app sits below sessions: a detached runtime's job runs as a background turn,
        # and the job's staleness check asks the session, through what sessions registers here.
        from jobs.runners import runner_register, session_check_register
        from sessions.background import run_detached
        from sessions.job_checks import job_session_check

        runner_register("runtime", run_detached)
        session_check_register(job_session_check)
