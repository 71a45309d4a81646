import pytest

from agents.gateway import ModelError
from agents.models import ModelSlot
from agents.selectors import endpoint_for_slot

pytestmark = pytest.mark.django_db


def test_a_slot_without_a_model_is_an_honest_error():
    with pytest.raises(ModelError) as error:
        endpoint_for_slot(slot="story")
    assert error.value.code == "no-model-configured" and "story" in error.value.message


def test_the_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("HUB_TEST_MODEL_KEY", "sk-from-env")
    ModelSlot.objects.create(
        name="story",
        base_url="https://models.example/v1",
        model="m",
        api_key_env="HUB_TEST_MODEL_KEY",
    )
    endpoint = endpoint_for_slot(slot="story")
    assert endpoint.api_key == "sk-from-env"
    # No column holds the secret: only the variable's name is stored.
    assert "sk-from-env" not in repr(list(ModelSlot.objects.values_list()))


def test_a_disabled_slot_is_not_used():
    ModelSlot.objects.create(
        name="utility", base_url="https://m.example/v1", model="m", enabled=False
    )
    with pytest.raises(ModelError):
        endpoint_for_slot(slot="utility")
