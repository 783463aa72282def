"""Opening sessions within what an environment can take: the circuit breaker first, then a slot
of the session budget, then the opening itself, retried while the env says it is busy.

This module is the only owner of a session's budget slot: `open_sessions` takes it (and gives
it back when the opening fails), `close_sessions` gives it back once the server has let the
session go. An `Episode` calls those two, and `env_failed` when the environment failed a
rollout. A server found dead is watched (`_probe_until_answered`) so that its breaker closes
as soon as it answers again. See `budget`, `backoff` and `breaker` for each rule.

Replicas (a pool `Connection`, several URLs of one env): a session opens on one replica and is
pinned there (`pinned`: its client's address; its calls, its failures and its breaker are
that replica's). The slot of
the env's budget is taken first (the configured cap is the env's, all replicas together); then
the replica is picked (`_pick`): among those whose breaker is not open, one below its learned
capacity first, then the one with the fewest sessions of this process open or opening, ties
broken by a rotating order (each pick starts one replica further along the list than the pick
before: A, B, A, B... for serial rollouts), so the same calls pick the same replicas in every
run. Each replica has its own breaker and learned capacity; a replica that fails an opening
counts it on its breaker (a dead one opens it at once, and is watched until it answers) and the
next replica is asked within the same `timeout`. A replica picked as one with room that refuses
the opening at its capacity hands the rollout back to the pool, whatever this process holds
there: it has learned its window, or, when other clients fill it, it is `busy` for a while
(ranked full); the pick is made again. Only when no replica has room does a rollout wait on one,
as it would on one server. When every replica's breaker is open the rollout ends at once with
one line, as for one server.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import OrlgenRuntimeError, ServerDead
from ..log import log_once
from ..redaction import public_url
from . import backoff, breaker, budget, cluster
from .metrics import COUNTERS

# Failures that say nothing about the env's health: it is busy, or we did not ask it.
_NOT_THE_ENVS = (backoff.AtCapacity, budget.NoSlot)


class CircuitOpen(OrlgenRuntimeError):
    """The breaker ended the rollout before asking the environment."""


def env_key(connection: Any) -> tuple[Any, str]:
    """One environment, whichever API key or options reach it (a pool: its replicas together)."""
    return (connection.url or connection.catalog or connection.replicas or None, connection.env)


def pinned(pool: Any, session: Any) -> Any:
    """The replica of `pool` that `session` was opened on (a plain `Connection`: the address of
    the session's own client, which sends its every request), None without a session."""
    if session is None or session.client.address.base not in pool.replicas:
        return None
    return pool.replica(session.client.address.base)


def open_sessions(
    connection: Any,
    owner: type | None,
    timeout: float,
    open_once: Callable[[Any], Awaitable[Any]],
    count: int = 1,
) -> list[Any]:
    """Open up to `count` sessions together (at least one, or raise): the first waits for a
    budget slot, the others take only slots free right now. Each session holds its slot.
    `owner` is the class whose run-wide budget applies (`set_max_sessions(n, owner)`). A pool's
    sessions open together on one replica (`_open_on_pool`)."""
    if connection.replicas:
        return _open_on_pool(connection, owner, timeout, open_once, count)
    return _open_on(connection, owner, timeout, open_once, count)


def _open_on(
    connection: Any,
    owner: type | None,
    timeout: float,
    open_once: Callable[[Any], Awaitable[Any]],
    count: int,
    whole: budget.Budget | None = None,
    room: bool = False,
) -> list[Any]:
    """`open_sessions` on one server. `whole`: the pool's budget, whose slots the caller holds:
    then this server is a replica, and its own budget only learns its capacity; `room`: the pool
    picked it as one with room, so any refusal at capacity hands the rollout back (`_requeue`)."""
    key = env_key(connection)
    gate = breaker.for_env(key)
    _hear_of_death(connection, key, gate)
    refusal = gate.admit()
    if refusal is not None:
        COUNTERS.add("breaker_rejections")
        raise CircuitOpen(refusal)
    slots = budget.for_env(key, owner, configured=whole is None)
    deadline = time.monotonic() + timeout
    taken = 0
    try:
        waited = slots.acquire(timeout)
        taken = 1
        taken += _take_free(slots, count - 1)
        while True:
            left = max(0.001, deadline - time.monotonic())
            try:
                opening = functools.partial(
                    _open_together, open_once=open_once, count=taken, timeout=left, slots=slots, handback=room
                )
                opened: list[Any] = connection.run(opening, left + 5.0)
                break
            except budget.Requeue:  # refused at the env's learned capacity: queue for a slot
                for _ in range(taken):
                    slots.release()
                taken = 0
                if whole is not None:  # a replica at its capacity: the pool picks again (`_open_on_pool`)
                    gate.abandon()
                    raise
                waited += slots.acquire(max(0.0, deadline - time.monotonic()))
                taken = 1
        if waited > 0.001:
            COUNTERS.add("capacity_waits")
            COUNTERS.add("capacity_wait_s", waited)
    except BaseException as exc:
        for _ in range(taken):
            slots.release()
        if isinstance(exc, _NOT_THE_ENVS):
            gate.abandon()
        raise  # an env failure is counted by the adapter's `env_failed`
    COUNTERS.add("sessions_opened", len(opened))
    for session in opened:
        if whole is None:
            budget.bind(session, slots)
        else:
            budget.bind(session, whole, slots)
    for _ in range(taken - len(opened)):  # slots of sessions that did not open
        slots.release()
    gate.succeeded()
    return opened


def _open_on_pool(
    pool: Any, owner: type | None, timeout: float, open_once: Callable[[Any], Awaitable[Any]], count: int
) -> list[Any]:
    """A pool's sessions: slots of the env's budget, then a replica (`_pick`); a replica that
    fails the opening counts it on its own breaker and the next one is asked, within `timeout`;
    one picked with room that refuses at its capacity has learned it (its window, or `busy`) and
    the pick is made again (a replica with room first; when none has, the rollout waits on the
    fewest-open replica: in its queue, or asking it until `timeout` as with one server).
    Raises the last replica's failure when every one failed, `CircuitOpen` when none was asked."""
    deadline = time.monotonic() + timeout
    whole = budget.for_env(env_key(pool), owner)
    taken = 0
    try:
        waited = whole.acquire(timeout)
        taken = 1 + _take_free(whole, count - 1)
        if waited > 0.001:
            COUNTERS.add("capacity_waits")
            COUNTERS.add("capacity_wait_s", waited)
        tried: list[str] = []
        failure: BaseException | None = None
        while True:
            picked = _pick(pool, tried, whole)
            if picked is None:
                raise failure if failure is not None else _all_refusing(pool)
            replica, room = picked
            tried.append(replica.url)
            left = max(0.001, deadline - time.monotonic())
            try:
                opened = _open_on(replica, owner, left, open_once, taken, whole, room)
                break
            except (*_NOT_THE_ENVS, budget.BudgetError):
                raise
            except budget.Requeue:  # it refused at its capacity, now learned: pick again, it included
                tried.remove(replica.url)
                continue
            except CircuitOpen:  # its breaker opened since the pick: the next replica
                continue
            except Exception as exc:  # this replica's failure: counted on its breaker
                _replica_failed(replica, exc)
                failure = exc
    except BaseException:
        for _ in range(taken):
            whole.release()
        raise
    for _ in range(taken - len(opened)):  # slots of sessions that did not open
        whole.release()
    return opened


def _pick(pool: Any, tried: list[str], whole: budget.Budget) -> tuple[Any, bool] | None:
    """The replica the next opening goes to, and whether it has room; None when none is left:
    not tried yet, its breaker not open; then one with room (below its learned capacity, and
    not `busy` with other clients' sessions), then the fewest sessions of this process open or
    opening on it, ties broken by a turn that moves one replica further at each pick."""
    turn = whole.next_turn()
    ranked = []
    for place, url in enumerate(pool.replicas):
        replica = pool.replica(url)
        if url in tried or breaker.for_env(env_key(replica)).refusing() is not None:
            continue
        slots = budget.for_env(env_key(replica), None, configured=False)
        window = slots.window
        full = (window is not None and slots.open >= window) or slots.busy()
        ranked.append(((full, slots.open, (place - turn) % len(pool.replicas)), replica))
    if not ranked:
        return None
    (full, _, _), replica = min(ranked, key=lambda entry: entry[0])
    return replica, not full


def _all_refusing(pool: Any) -> CircuitOpen:
    """The one line a rollout ends with when every replica's breaker is open."""
    COUNTERS.add("breaker_rejections")
    first = pool.replica(pool.replicas[0])
    why = breaker.for_env(env_key(first)).refusing() or "circuit open"
    return CircuitOpen(f"every replica ({len(pool.replicas)}) is refused; the first: {why}")


def _replica_failed(replica: Any, exc: BaseException) -> None:
    """A replica failed: its breaker counts it (`env_failed`), and its opening is said once per
    replica, naming it (without credentials)."""
    opened = env_failed(replica, exc)
    if opened is not None:
        log_once(
            f"breaker {env_key(replica)}",
            f"the environment {replica.env!r} at replica {public_url(replica.url)}: {opened}",
        )


def env_failed(connection: Any, exc: BaseException, session: Any = None) -> str | None:
    """A rollout's environment failed after its session opened: the breaker counts it; a server
    found dead (refusing connections, or silent) opens it at once. Returns why the breaker
    refuses from now on when this failure opened it, for the adapter to say once; else None.
    A pool's failure is its `session`'s replica's (said here, per replica); a failed opening
    was counted on each replica it tried."""
    if connection.replicas:
        replica = pinned(connection, session)
        if replica is not None:
            _replica_failed(replica, exc)
        return None
    if isinstance(exc, ServerDead):
        gate = breaker.for_env(env_key(connection))
        why = f"{type(exc).__name__}: {exc}"
        opened = gate.trip(why)
        if opened is not None and cluster.in_ray():
            cluster.counts_for(env_key(connection)).tell_dead(why)
        _watch(connection, gate)
        return opened
    if isinstance(exc, (*_NOT_THE_ENVS, CircuitOpen)):
        return None
    return breaker.for_env(env_key(connection)).failed()


def call_refusal(connection: Any, session: Any = None) -> str | None:
    """Why a tool call of an open session should not be sent (the env's breaker is open, or
    for a pool the breaker of the `session`'s replica), or None. Unlike `open_sessions`, a
    call never takes the half-open probe."""
    if connection.replicas:
        replica = pinned(connection, session)
        return None if replica is None else breaker.for_env(env_key(replica)).refusing()
    return breaker.for_env(env_key(connection)).refusing()


def _hear_of_death(connection: Any, key: Any, gate: breaker.Breaker) -> None:
    """Inside a Ray job, a server another process of the cluster found dead opens this process's
    breaker too: its next rollout ends at once rather than failing first (`cluster`)."""
    if not cluster.in_ray():
        return
    why = cluster.counts_for(key).news_of_death(within=gate.base_cooldown)
    if why is not None and gate.trip(f"found by another worker: {why}") is not None:
        _watch(connection, gate)


def _watch(connection: Any, gate: breaker.Breaker) -> None:
    """Probe a dead server until it answers (one watch per breaker). Only an address's own
    health: a catalog env's sessions host answers whatever the env's state."""
    if connection.url is not None and gate.watch():
        connection.watch(functools.partial(_probe_until_answered, gate=gate))


async def _probe_until_answered(client: Any, gate: breaker.Breaker) -> None:
    """Ask a dead server's `/health` every `breaker.PROBE_EVERY` seconds, one request at a time
    (each bounded by `breaker.PROBE_TIMEOUT`), until the breaker closes: by an answer here, or
    by a rollout's own probe once the cool-down is over. Cancelled at the process's exit."""
    while True:
        await asyncio.sleep(breaker.PROBE_EVERY)
        if not gate.watching():
            return
        gate.probed()
        try:
            await asyncio.wait_for(client.request("GET", "/health", busy=False, window=0.0), breaker.PROBE_TIMEOUT)
        except Exception:  # refused, hung, an error status: still down
            continue
        gate.succeeded()


def _take_free(slots: budget.Budget, wanted: int) -> int:
    got = 0
    for _ in range(max(0, wanted)):
        try:
            slots.acquire(0, block=False)
        except budget.NoSlot:
            break
        got += 1
    return got


async def _open_together(
    env: Any,
    open_once: Callable[[Any], Awaitable[Any]],
    count: int,
    timeout: float,
    slots: budget.Budget,
    handback: bool = False,
) -> list[Any]:
    """`count` sessions opened at once, each retried while the env is busy (or handed back to
    the budget's queue, `_requeue`); the ones that opened, or the first failure when none did."""
    import asyncio

    holding = lambda: slots.held  # noqa: E731
    requeue = lambda exc: _requeue(slots, exc, handback)  # noqa: E731
    if count == 1:
        return [await backoff.open_patiently(lambda: open_once(env), timeout, holding, requeue)]
    results = await asyncio.gather(
        *(backoff.open_patiently(lambda: open_once(env), timeout, holding, requeue) for _ in range(count)),
        return_exceptions=True,
    )
    opened = [result for result in results if not isinstance(result, BaseException)]
    if not opened:
        raise next(result for result in results if isinstance(result, BaseException))
    return opened


def _requeue(slots: budget.Budget, refusal: BaseException, handback: bool = False) -> None:
    """A new session refused (the env is at its limit): the budget learns the env's capacity, and
    when sessions of the env are open or opening the rollout waits in the budget's queue for one
    to close (woken when its slot frees) rather than sleeping out `Retry-After` and asking again.
    `handback` (a pool's replica picked with room): the rollout goes back to the pool even when
    nothing of this process is open there, for another replica to take it."""
    if slots.refused() or handback:
        raise budget.Requeue("the environment is at its session limit") from refusal


def close_sessions(slot: list[Any], connection: Any, wait: bool = True) -> None:
    """Delete the sessions in `slot` (emptying it) and give their budget slots back: waited for
    (bounded) normally; started in the background after a failure, or from the loop's own
    thread (a finalizer may run there). Best effort: the server reaps what we miss after 15 idle
    minutes."""
    while slot:
        session = slot.pop()
        close = lambda env, s=session: _deleted(s)  # noqa: E731
        if not wait or threading.current_thread().name == "orlgen-sdk":
            connection.run_nowait(close)
            continue
        try:
            connection.run(close, timeout=10.0)
        except Exception:
            pass


async def _deleted(session: Any) -> None:
    """Delete the session; its slot is given back as soon as the env has let it go (`/delete`
    answered), so a rollout queued for a slot does not wait for the session id's retirement."""
    try:
        await session.delete()
    finally:
        budget.release(session)
    session.retire()
