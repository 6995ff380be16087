class DevChainError(RuntimeError):
    """The local development chain or its tooling is not in the expected state."""
