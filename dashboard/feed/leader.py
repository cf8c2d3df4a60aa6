"""One cache owner per cluster: a lease in Redis that the owner renews.

A standby polls the lease and takes over within a lease period of the owner's
death. Renewal and release check the token, so an owner that stalled past its
lease can never extend or drop the new owner's.
"""
import time
import uuid

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


class LeaderLock:
    def __init__(self, client, key="schedview:owner:leader", lease=5.0, holder=None):
        self.client = client
        self.key = key
        self.lease = lease
        self.token = f"{holder or 'owner'}:{uuid.uuid4().hex}"
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def try_acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=int(self.lease * 1000)))

    def acquire(self, stop, poll=0.5, sleep=time.sleep) -> bool:
        """Wait until we hold the lease (True) or `stop` is set (False)."""
        while not stop.is_set():
            if self.try_acquire():
                return True
            stop.wait(poll) if sleep is time.sleep else sleep(poll)
        return False

    def renew(self) -> bool:
        """Extend the lease; False means it was lost (expired and maybe taken)."""
        return bool(self._renew(keys=[self.key], args=[self.token, int(self.lease * 1000)]))

    def release(self):
        self._release(keys=[self.key], args=[self.token])

    def holder(self):
        value = self.client.get(self.key)
        return value.decode() if value else None
