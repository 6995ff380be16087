"""``python -m kassa_dev.chaos``: the run (the plan, the stack, the load, the chaos, the checks)."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from web3 import Web3

from kassa_common.db import make_engine, make_session_factory
import kassa_dev.chaos
from kassa_dev import chain
from kassa_dev.chaos.checks import STALLED_SECONDS, SUSPECTS, Deliveries, check, wait_quiet
from kassa_dev.chaos.stack import Chaos, Stack, log, start_stack
from kassa_dev.chaos.traffic import Traffic, set_up_merchant
from kassa_dev.receiver import Receiver


@dataclass
class Plan:
    seconds: float
    test_per_second: float
    live_per_second: float
    kills_per_type: int
    outages: list[tuple[str, float]]  # ("postgres" | "rabbitmq" | "receiver", seconds down)
    quiesce_timeout: float


def plan_for(args) -> Plan:
    if args.ha:  # the failovers, one third and two thirds in, with a kill of each process type
        return Plan(
            seconds=args.seconds or 90,
            test_per_second=0.6,
            live_per_second=0.3,
            kills_per_type=1,
            outages=[("rabbitmq-leader", 0), ("postgres-primary", 0)],
            quiesce_timeout=240,
        )
    if args.short:
        return Plan(
            seconds=args.seconds or 50,
            test_per_second=0.6,
            live_per_second=0.3,
            kills_per_type=1,
            outages=[("postgres", 5), ("rabbitmq", 5), ("receiver", 10)],
            quiesce_timeout=240,
        )
    return Plan(
        seconds=args.seconds or 420,
        test_per_second=1.0,
        live_per_second=0.4,
        kills_per_type=3,
        outages=[
            ("postgres", 5),
            ("rabbitmq", 5),
            ("receiver", 30),
            ("postgres", 60),
            ("rabbitmq", 60),
            ("receiver", 20),
        ],
        quiesce_timeout=360,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kassa_dev.chaos", description=(kassa_dev.chaos.__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--short", action="store_true", help="one kill per process type, 5 s outages (~2 min)")
    parser.add_argument(
        "--ha",
        action="store_true",
        help=(
            "a three-node RabbitMQ cluster and a PostgreSQL primary with a streaming standby; the node "
            "leading the queues killed, the primary killed and the standby promoted (~5 min)"
        ),
    )
    parser.add_argument("--seconds", type=float, default=None, help="length of the chaos phase")
    parser.add_argument("--seed", type=int, default=None, help="random seed (printed; repeat a run's order)")
    args = parser.parse_args(argv)
    plan = plan_for(args)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    root = chain.find_repo_root()
    log_dir = Path(tempfile.mkdtemp(prefix="kassa-chaos-"))
    kind = "HA" if args.ha else "short" if args.short else "full"
    log(f"{kind} run, seed {seed}, {plan.seconds:g} s of chaos; logs in {log_dir}")
    began = time.monotonic()
    stack: Stack | None = None
    receiver = Receiver()
    traffic: Traffic | None = None
    engine = None
    try:
        stack = start_stack(root, log_dir, ha=args.ha)
        merchant = set_up_merchant(stack, receiver)
        webhooks = Deliveries(receiver, merchant.secrets)
        w3 = Web3(Web3.HTTPProvider(stack.anvil.rpc_url))
        traffic = Traffic(
            stack.api,
            merchant.test_key,
            merchant.live_key,
            w3,
            chain.dev_token_addresses()["USDC"],
            plan.test_per_second,
            plan.live_per_second,
        )
        traffic.start()
        chaos = Chaos(stack, receiver, plan.seconds, plan.kills_per_type, plan.outages, rng)
        chaos.run()
        log(f"chaos over; {len(traffic.created)} payments so far, stopping the load")
        traffic.stop()
        engine = make_engine(stack.database_url, pool_size=2)
        sessions = make_session_factory(engine)
        state = wait_quiet(stack, sessions, webhooks, plan.quiesce_timeout)
        if state is not None:
            log(f"not quiet (timeout {plan.quiesce_timeout:g} s, or nothing moved for {STALLED_SECONDS} s): {state}")
        violations = check(stack, sessions, traffic, webhooks, chaos)
        if state is not None and not violations:
            violations.append(("payments", f"the stack did not go quiet: {state}"))
        log(f"took {time.monotonic() - began:.0f} s; logs in {log_dir}")
        if violations:  # the log tails first, so that the violations end the output
            suspects = dict.fromkeys(name for key, _ in violations for name in SUSPECTS[key])
            print(stack.log_tails(suspects), flush=True)
            for _key, what in violations:
                log(f"VIOLATION: {what}")
            log(
                f"FAILED: {len(violations)} violations; the last lines of {', '.join(suspects)} are above "
                f"(logs in {log_dir})"
            )
            return 1
        log("OK: nothing lost, nothing parked, nothing duplicated")
        return 0
    finally:
        if traffic is not None:
            traffic.stopping.set()  # the load threads end with the run
        if engine is not None:
            engine.dispose()
        receiver.close()
        if stack is not None:
            for p in stack.every():
                p.stop()
            chain.stop_anvil(stack.anvil)
            for name, server in stack.servers:
                if server.log.exists():
                    shutil.copy(server.log, log_dir / f"{name}.log")
                server.remove()


if __name__ == "__main__":
    sys.exit(main())
