"""Which processes run the dashboard, as the overview shows them.

`manage.py up` publishes its supervisor's children (pid, restarts, last restart,
last exit) to Redis on every start and exit; the leading cache owner is whoever
holds the leader lease (`dashboard/wire/lease.py`). In a cluster no supervisor
publishes (Kubernetes restarts pods there) and the overview shows the leader only.
"""
from dataclasses import dataclass
from datetime import datetime, timezone

import orjson
import redis

from dashboard.wire.keys import OWNER_LEASE, SUPERVISOR_CHILDREN
from dashboard.wire.lease import holder_name, lease_holder


def publish(client: redis.Redis, states: list[dict]):
    """Store the children's states. Redis may be the child that is down (the console says
    so): the next start or exit publishes again."""
    try:
        client.set(SUPERVISOR_CHILDREN, orjson.dumps(states))
    except redis.RedisError:
        pass


def clear(client: redis.Redis):
    try:
        client.delete(SUPERVISOR_CHILDREN)
    except redis.RedisError:
        pass    # the embedded Redis is already gone, and the key with it


@dataclass(frozen=True)
class SupervisedChild:
    name: str
    pid: int
    restarts: int
    last_restart: datetime | None
    last_exit: int | None
    probe: str = ""     # host:port of its /metrics ("" when it serves none)


@dataclass(frozen=True)
class Processes:
    leader: str                             # the leading owner's id, "" when none leads
    children: list[SupervisedChild]         # [] outside `manage.py up`
    error: str = ""                         # Redis did not answer


def processes(client: redis.Redis) -> Processes:
    try:
        token = lease_holder(client, OWNER_LEASE)
        raw = client.get(SUPERVISOR_CHILDREN)
    except redis.RedisError as exc:
        return Processes("", [], str(exc))
    return Processes(holder_name(token), [
        SupervisedChild(state["name"], state["pid"], state["restarts"],
                        datetime.fromtimestamp(state["last_restart"], timezone.utc)
                        if state["last_restart"] else None, state["last_exit"],
                        state.get("probe", ""))
        for state in orjson.loads(raw or b"[]")])
