"""The owner's channel layer: a group send that lands only under the sender's lease term.

channels_redis's own group_send reads the group's members and then adds the message to
each member's channel with a Lua script; here the script first checks Redis's copy of
the lease term (fence.py) and sends nothing under a stale one, in the same atomic step,
so an owner that wakes after another took its lease cannot reach a browser.
"""
import time

from channels_redis.core import RedisChannelLayer

# KEYS[1]: the term's copy, then the channels' keys; ARGV[1]: the sender's term, then a
# message per channel, a capacity per channel, the time and the expiry (channels_redis's
# shapes, so its receivers read them as their own).
_FENCED_SEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local channels = #KEYS - 1
local now, expiry = ARGV[#ARGV - 1], ARGV[#ARGV]
for i = 1, channels do
    local key = KEYS[i + 1]
    if redis.call('ZCOUNT', key, '-inf', '+inf') < tonumber(ARGV[i + 1 + channels]) then
        redis.call('ZADD', key, now, ARGV[i + 1])
        redis.call('EXPIRE', key, expiry)
    end
end
return 1
"""


class FencedChannelLayer(RedisChannelLayer):
    """One Redis host only: the term's copy and every channel must be on the server whose
    script checks the one and writes the others."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.ring_size != 1:
            raise ValueError("the owner's fenced sends need one Redis host in CHANNEL_LAYERS")

    async def fenced_group_send(self, group: str, message: dict, term_key: str,
                                term: int) -> bool:
        """Send `message` to `group` if `term` is the lease's current one; whether it was."""
        assert self.require_valid_group_name(group), "Group name not valid"
        connection = self.connection(0)
        group_key = self._group_key(group)
        # The layer's own housekeeping: members whose consumers went away long ago.
        await connection.zremrangebyscore(group_key, min=0,
                                          max=int(time.time()) - self.group_expiry)
        members = [name.decode() for name in await connection.zrange(group_key, 0, -1)]
        _, messages, capacities = self._map_channel_keys_to_connection(members, message)
        keys = list(messages)
        sent = await connection.eval(
            _FENCED_SEND, 1 + len(keys), term_key, *keys, term,
            *(messages[k] for k in keys), *(capacities[k] for k in keys),
            time.time(), self.expiry)
        return sent == 1
