"""An output's address in both shapes nodes write: Bitcoin Core 22+ (``address``) and
Bitcoin Core 0.21 / litecoind 0.21 (``addresses``, a list)."""

from kassa_common.chains.utxo import output_address

ADDRESS = "rltc1qqtnx70vkgtuv7rjkn2e8ey4rszeh3qjmsuxf4c"


def test_the_address_of_either_shape():
    assert output_address({"scriptPubKey": {"address": ADDRESS}}) == ADDRESS
    assert output_address({"scriptPubKey": {"addresses": [ADDRESS], "reqSigs": 1}}) == ADDRESS


def test_outputs_paying_no_one_address():
    assert output_address({"scriptPubKey": {"type": "nulldata"}}) is None
    assert output_address({"scriptPubKey": {"type": "witness_mweb_hogaddr"}}) is None
    assert output_address({"scriptPubKey": {"type": "multisig", "addresses": [ADDRESS, ADDRESS]}}) is None
    assert output_address({}) is None
