"""The deployment settings that make a stack a development one: KASSA_ENV, the built-in
SECRET_KEY and FIXED_RATES_ALLOW_LIVE (read from an environment mapping, nothing else)."""

from __future__ import annotations

import pytest

from kassa_common.config import Settings, UnsafeSettings


def test_production_is_the_default_and_refuses_the_built_in_secret():
    settings = Settings.from_env({})
    assert settings.kassa_env == "production" and not settings.development and not settings.rates.fixed_rates_allow_live
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
    assert Settings.from_env({"FIXED_RATES_ALLOW_LIVE": "true"}).rates.fixed_rates_allow_live
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


def test_the_webs_the_rate_services_and_the_senders_settings_are_read_into_their_groups():
    settings = Settings.from_env(
        {
            "SECRET_KEY": "the-operators-own",
            "REQUIRE_2FA": "yes",
            "METRICS_TOKEN": "m",
            "RATES_URL": "http://127.0.0.1:9/{symbol}",
            "RATE_HOLD_GRACE_MINUTES": "5",
            "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
            "SMTP_FROM": "Shop <shop@example.com>",
        }
    )
    assert settings.web.secret_key == "the-operators-own" and settings.web.require_2fa
    assert settings.web.metrics_token == "m" and settings.web.rate_limit_per_minute == 100
    assert settings.rates.url == "http://127.0.0.1:9/{symbol}" and settings.rates.hold_grace_minutes == 5
    assert settings.sender.webhook_allow_private_urls and settings.sender.smtp_from == "Shop <shop@example.com>"
    assert settings.sender.smtp_url is None
    assert "the-operators-own" not in repr(settings) and "metrics_token" not in repr(settings)


def test_with_changes_some_of_a_groups_settings_and_keeps_the_rest_checked():
    settings = Settings.from_env({"RATE_LIMIT_PER_MINUTE": "7"})
    changed = settings.with_(web={"require_2fa": True}, bus_prefix="t1")
    assert changed.web.require_2fa and changed.web.rate_limit_per_minute == 7 and changed.bus_prefix == "t1"
    assert not settings.web.require_2fa
    with pytest.raises(ValueError, match="RATES_MIN_SOURCES"):
        settings.with_(rates={"providers": ("kraken",), "min_sources": 2})
