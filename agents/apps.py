from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


def _slot_changed(**_kwargs: object) -> None:
    from agents.selectors import slots_forget

    slots_forget()


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent runtimes and the model gateway"

    def ready(self) -> None:
        # The enabled slots are cached where the cache is shared (agents/selectors.py).
        post_save.connect(_slot_changed, sender="agents.ModelSlot", dispatch_uid="slots-forget")
        post_delete.connect(_slot_changed, sender="agents.ModelSlot", dispatch_uid="slots-forget")
