"""The deployment settings that make a stack a development one: KASSA_ENV, the built-in
SECRET_KEY and FIXED_RATES_ALLOW_LIVE (read from an environment mapping, nothing else)."""

from __future__ import annotations

import pytest

from kassa_common.config import Settings, UnsafeSettings


def test_production_is_the_default_and_refuses_the_built_in_secret():
    settings = Settings.from_env({})
    assert settings.kassa_env == "production" and not settings.development and not settings.fixed_rates_allow_live
    with pytest.raises(UnsafeSettings, match=r"SECRET_KEY .* KASSA_ENV=development"):
        settings.check_web()


@pytest.mark.parametrize(
    "env",
    [
        {"SECRET_KEY": "a-long-random-secret-of-the-operator"},
        {"KASSA_ENV": "development"},
        {"KASSA_ENV": " Development "},
    ],
)
def test_an_own_secret_or_a_development_stack_starts(env):
    Settings.from_env(env).check_web()


def test_an_unknown_environment_is_a_setting_error_not_production_by_accident():
    with pytest.raises(ValueError, match="setting KASSA_ENV: must be one of production, development"):
        Settings.from_env({"KASSA_ENV": "developement"})


def test_fixed_rates_for_live_payments_are_a_boolean_setting():
    assert Settings.from_env({"FIXED_RATES_ALLOW_LIVE": "true"}).fixed_rates_allow_live
    with pytest.raises(ValueError, match="FIXED_RATES_ALLOW_LIVE"):
        Settings.from_env({"FIXED_RATES_ALLOW_LIVE": "maybe"})


def test_the_chain_watchers_and_the_sweepers_settings_are_read_with_the_rest():
    settings = Settings.from_env(
        {
            "CHAIN_WATCHER_POLL_SECONDS": "0.5",
            "CHAIN_WATCHER_NETWORKS": "local_evm, base",
            "SWEEP_BATCH_SIZE": "7",
            "SWEEPER_NETWORKS": "base",
        }
    )
    assert settings.watcher.poll_seconds == 0.5 and settings.watcher.networks == ("LOCAL_EVM", "BASE")
    assert settings.watcher.batch_blocks == 500 and settings.watcher.reload_seconds == 30
    assert settings.sweeper.batch_size == 7 and settings.sweeper.networks == ("BASE",)
    assert settings.sweeper.private_key is None
