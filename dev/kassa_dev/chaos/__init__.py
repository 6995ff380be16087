"""``make chaos``: the proof of DESIGN §7's "nothing lost" on a stack that is being broken.

Every process of the Procfile runs under a restart loop (two settlers, two expirers and two
webhook senders side by side) on a PostgreSQL and a RabbitMQ that this run starts for itself,
on their own ports and data directories, so it can crash them by pid without touching the
machine's shared servers. While a steady stream of payments comes in (test-mode ones that
complete through the settler path, and LOCAL_EVM ones paid on anvil), it SIGKILLs every
process type at random, takes PostgreSQL and RabbitMQ down for 5 s and for 60 s each, and
has the merchant's webhook receiver answer 503 for a while. Then it waits for the stack to
go quiet and checks what the design promises: every payment created is COMPLETED exactly
once, every transition event reached the receiver, signed, under one event id, the outbox
is drained, the dead-letter queues are empty and nothing was counted twice. Any violation
is printed, with the tails of the logs of the processes concerned, and the exit status is 1.

    python -m kassa_dev.chaos            # the full run, ~10 minutes
    python -m kassa_dev.chaos --short    # one kill per process type, 5 s outages (~2 minutes)
    python -m kassa_dev.chaos --ha       # a RabbitMQ cluster and a PostgreSQL standby, failed over (~4 minutes)

With ``--ha`` the servers are a three-node RabbitMQ cluster and a PostgreSQL primary with a
synchronous streaming standby (``kassa_dev.instances``), the processes are given every node
and both hosts, and the disruptions are the failovers: the RabbitMQ node leading the queues
killed, then the primary killed and the standby promoted (``stack.Chaos``), each timed.

The harness is in the development package, beside ``make run``'s launcher, because it is
tooling: the services never import it. ``stack`` starts the private servers and the
processes and breaks them, ``traffic`` is the merchant and the load, ``checks`` waits for
quiescence, checks and prints the counts, ``__main__`` runs it all; the merchant's endpoint
is the tests' webhook receiver (kassa_dev.receiver). ``make test`` runs the short version
(tests/e2e/test_chaos_short.py).
"""
