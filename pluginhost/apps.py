from django.apps import AppConfig


class PluginhostConfig(AppConfig):
    name = "pluginhost"
