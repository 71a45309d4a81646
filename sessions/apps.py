from django.apps import AppConfig


class PlayConfig(AppConfig):
    # django.contrib.sessions owns the label "sessions"; ours is "play".
    name = "sessions"
    label = "play"
    verbose_name = "Play sessions"
