"""Fencing: every write of an owner carries its lease term, and a stale term's write is
refused where it lands, so an owner that stalled past its lease (SIGSTOP, a long pause)
cannot write over the next owner's, however late it wakes.

The term lives in the database (`LeaseTerm`, one row): taking the lease bumps it, and
every batch the owner writes first re-checks it with a conditional UPDATE in the same
transaction. The UPDATE locks the row until the commit, so a taking waits for a write
under way and a write after a taking finds the term moved: one or the other, never both.
Redis holds a copy of the term (the lease's `:term` key) for the writes that land there
(the sequence counter, the status, the channel layer's sends, the replies to commands): a Lua script checks it
and writes in one step. An emptied Redis has no copy: those writes wait until the owner
has proven, by the database's term, that nobody led since, and set the copy again.
"""
from django.db import connections, transaction

from dashboard.models import LeaseTerm

# KEYS[1]: the term's copy; ARGV[1]: the writer's term; then (key, value, ttl) threes,
# a ttl of 0 meaning none.
_SET_IF_TERM = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 3 do
    if ARGV[i + 2] == '0' then redis.call('SET', ARGV[i], ARGV[i + 1])
    else redis.call('SET', ARGV[i], ARGV[i + 1], 'EX', ARGV[i + 2]) end
end
return 1
"""

# KEYS[1]: the term's copy; ARGV[1]: the replier's term, ARGV[2]: the replies' ttl, then
# (reply list, reply) pairs.
_PUSH_IF_TERM = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 3, #ARGV, 2 do
    redis.call('LPUSH', ARGV[i], ARGV[i + 1])
    redis.call('EXPIRE', ARGV[i], ARGV[2])
end
return 1
"""

# Sets the copy of the term (KEYS[2]) only while the lease (KEYS[1]) holds the setter's
# token (ARGV[1]): an owner that lost the lease since cannot put its term back.
_MIRROR = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""


class StaleTerm(RuntimeError):
    """Another owner took the lease since this term: nothing of this owner may land."""


def take_term() -> int:
    """Bump the database's term for an owner taking the lease; its new term.

    A write under way holds the term's row to its commit. One of an owner frozen
    mid-write (SIGSTOP) would hold it, and the rows it touched, until that owner wakes:
    on PostgreSQL the taker first ends every other session writing under a term (its
    owner's lease is gone, so whatever it writes is stale: rolled back now, not later)."""
    connection = connections["default"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_locks "
                           "WHERE locktype = 'relation' AND relation = %s::regclass "
                           "AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()",
                           [LeaseTerm._meta.db_table])
    with transaction.atomic():
        # The row is the migration's; made here when the table was emptied (tests' flushes).
        row, _ = LeaseTerm.objects.select_for_update().get_or_create(pk=1)
        row.term += 1
        row.save(update_fields=["term"])
    return row.term


def hold_term(term: int):
    """Inside a write's transaction, first: lock the term's row if it is still `term`
    (the write then commits before any taking), else raise StaleTerm (rolling it back)."""
    if not LeaseTerm.objects.filter(pk=1, term=term).update(term=term):
        raise StaleTerm(f"the lease's term is no longer {term}: another owner took it")


class RedisFence:
    """The Redis side of the fence: writes there that land only under the writer's term."""

    def __init__(self, client, lease_key: str, term_key: str):
        self.client = client
        self.lease_key = lease_key
        self.term_key = term_key
        self._set_if_term = client.register_script(_SET_IF_TERM)
        self._mirror = client.register_script(_MIRROR)
        self._push_if_term = client.register_script(_PUSH_IF_TERM)

    def mirror(self, token: str, term: int) -> bool:
        """Set Redis's copy of the term, if the lease holds `token` (else False)."""
        return bool(self._mirror(keys=[self.lease_key, self.term_key], args=[token, term]))

    def set(self, term: int, values: dict) -> bool:
        """SET each key to its (value, ttl seconds or 0) if `term` is current; whether it did.
        Raises redis's errors while Redis is unreachable."""
        args = [term]
        for key, (value, ttl) in values.items():
            args += [key, value, int(ttl)]
        return bool(self._set_if_term(keys=[self.term_key], args=args))

    def push_replies(self, term: int, replies: list, ttl: int) -> bool:
        """LPUSH each (list key, reply) with its list expiring in `ttl` s, if `term` is
        current; whether it did. A reply that a stale owner (frozen holding a popped
        command) pushed would tell its caller "done" for a change the leader never saw.
        Raises redis's errors while Redis is unreachable."""
        args = [term, int(ttl)]
        for key, reply in replies:
            args += [key, reply]
        return bool(self._push_if_term(keys=[self.term_key], args=args))
