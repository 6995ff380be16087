"""The merchant account: who signs in, how, and what the account holds (DESIGN.md sections
10 and 14: a person signs in as an account; money belongs to a store, the ``merchants`` row).

Where to look:

- ``stores``: accounts, stores and their members with roles (the last owner kept).
- ``invitations``: an owner invites an email with a role; the invitee accepts by the emailed link.
- ``merchants``: sign-up, passwords, activation, the account's settings, and its wallets
  (the checks of an extended public key or a settlement address, and the one writer of
  ``wallets``: ``upsert_wallet``).
- ``keys``: API keys (created with their secret shown once, revoked, listed).
- ``logins``: dashboard logins kept on the server (PostgreSQL or Redis), revocable.
- ``twofactor``: TOTP sign-in, its enrolment and its one-time recovery codes.
- ``password_reset``: the signed, expiring, single-use link by email.
- ``wallet_changes``: the policy of a change of where live money goes (which changes are
  held, for how long, when the password is asked again, what is emailed), the held changes
  and their cancel link, and ``apply_due`` (the expirer's job).
- ``notices``: emails to a merchant about its account, written in the caller's transaction.

The operator CLI, the dashboard, the API's authentication and the expirer call these
modules and hold no account logic. Whose objects a request acts on (an ``Owner``: merchant
and mode) is ``kassa_common.owner``, the scope every resource shares, not part of the account.
"""
