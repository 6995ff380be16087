"""Webhook signatures: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from kassa_common.webhooks.signing import SignatureError, sign, verify_signature

SECRET = "whsec_test_secret"
BODY = b'{"id":"evt_1","event":"payment.completed","data":{"amount":12.5}}'
T = 1_767_225_600


def test_sign_is_hmac_sha256_over_timestamp_dot_body():
    expected = hmac.new(SECRET.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, T, BODY) == f"t={T},v1={expected}"


def test_a_fresh_signature_verifies():
    assert verify_signature(SECRET, sign(SECRET, T, BODY), BODY, now=T + 10) is True


def test_default_tolerance_uses_the_clock():
    import time

    now = int(time.time())
    assert verify_signature(SECRET, sign(SECRET, now, BODY), BODY)


def test_str_body_is_treated_as_utf8_bytes():
    body = '{"name":"Café"}'
    assert verify_signature(SECRET, sign(SECRET, T, body.encode()), body, now=T)


def test_a_changed_body_is_refused():
    header = sign(SECRET, T, BODY)
    with pytest.raises(SignatureError, match="no signature matches"):
        verify_signature(SECRET, header, BODY.replace(b"12.5", b"99.5"), now=T)


def test_reserialised_json_is_refused():
    header = sign(SECRET, T, BODY)
    with pytest.raises(SignatureError):
        verify_signature(SECRET, header, BODY.replace(b",", b", "), now=T)


def test_another_secret_is_refused():
    with pytest.raises(SignatureError, match="no signature matches"):
        verify_signature("whsec_other", sign(SECRET, T, BODY), BODY, now=T)


@pytest.mark.parametrize("age", [301, -301, 10_000])
def test_a_timestamp_outside_the_tolerance_is_refused(age):
    with pytest.raises(SignatureError, match="tolerance"):
        verify_signature(SECRET, sign(SECRET, T, BODY), BODY, now=T + age)


def test_the_tolerance_boundary_is_inclusive():
    assert verify_signature(SECRET, sign(SECRET, T, BODY), BODY, now=T + 300)


def test_tolerance_none_skips_the_age_check():
    assert verify_signature(SECRET, sign(SECRET, T, BODY), BODY, tolerance=None, now=T + 10**6)


def test_a_tampered_timestamp_is_refused():
    header = sign(SECRET, T, BODY).replace(f"t={T}", f"t={T + 1}")
    with pytest.raises(SignatureError, match="no signature matches"):
        verify_signature(SECRET, header, BODY, now=T)


def test_any_of_several_v1_entries_may_match_during_secret_rotation():
    old, new = sign("whsec_old", T, BODY), sign(SECRET, T, BODY)
    header = f"{new},{old.split(',')[1]}"
    assert verify_signature("whsec_old", header, BODY, now=T)
    assert verify_signature(SECRET, header, BODY, now=T)
    with pytest.raises(SignatureError):
        verify_signature("whsec_third", header, BODY, now=T)


def test_unknown_schemes_and_spaces_are_ignored():
    v1 = sign(SECRET, T, BODY).split(",")[1]
    assert verify_signature(SECRET, f"t={T}, v0=abc, {v1}", BODY, now=T)


@pytest.mark.parametrize(
    "header, reason",
    [
        ("", "missing"),
        ("garbage", "malformed"),
        ("t=abc,v1=00", "malformed timestamp"),
        ("v1=00", "no timestamp"),
        (f"t={T}", "no v1 signature"),
        (f"t={T},v0=00", "no v1 signature"),
    ],
)
def test_malformed_headers_say_why(header, reason):
    with pytest.raises(SignatureError, match=reason):
        verify_signature(SECRET, header, BODY, now=T)


def test_signature_error_is_a_value_error():
    assert issubclass(SignatureError, ValueError)


def test_signing_with_the_new_and_the_old_secret_gives_both_entries_new_first():
    body, t = b'{"id":"evt_1"}', 1_700_000_000
    header = sign(("whsec_new", "whsec_old"), t, body)
    assert header == f"{sign('whsec_new', t, body)},v1={sign('whsec_old', t, body).split('v1=')[1]}"
    for secret in ("whsec_new", "whsec_old"):
        assert verify_signature(secret, header, body, now=t)
    with pytest.raises(SignatureError):
        verify_signature("whsec_other", header, body, now=t)


# Timestamps no real header carries: each is refused as malformed (a SignatureError), never
# an OverflowError from the age check or a timestamp read from non-ASCII digits.
ODD_TIMESTAMPS = [
    "9" * 400,
    "9" * 5000,
    "١٧٦٧٢٢٥٦٠٠",
    "𝟏𝟕𝟔𝟕𝟐𝟐𝟓𝟔𝟎𝟎",
    "-1",
    "+1767225600",
    "1_767_225_600",
    " 1767225600 1",
]


@pytest.mark.parametrize("tolerance", [300, None])
@pytest.mark.parametrize("timestamp", ODD_TIMESTAMPS)
def test_a_timestamp_that_is_not_a_plain_number_of_seconds_is_a_signature_error(timestamp, tolerance):
    with pytest.raises(SignatureError, match="malformed timestamp"):
        verify_signature(SECRET, f"t={timestamp},v1=00", BODY, tolerance=tolerance, now=T)


@pytest.mark.parametrize("header", ["t=,v1=00", "t=1767225600,", ",", "t=1767225600,v1=é", "t=1767225600,v1=\x00"])
def test_any_other_malformed_header_is_a_signature_error(header):
    with pytest.raises(SignatureError):
        verify_signature(SECRET, header, BODY, now=T)
