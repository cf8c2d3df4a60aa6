"""Every Redis key and channel-layer group the processes share, in one place.

A key's writer and its readers run in different processes: naming it twice would let
them drift apart silently, so both import it from here.
"""

# -- the cache owner --------------------------------------------------------------------------
OWNER_COMMANDS = "schedview:owner:commands"      # list: commands queued for the owner
OWNER_REPLY_PREFIX = "schedview:owner:reply:"    # + command id: list holding its one reply
OWNER_STATUS = "schedview:owner:status"          # the leading owner's counters (JSON)
OWNER_STATUS_TTL = 10                            # seconds: no status means no live owner
OWNER_SEQ = "schedview:owner:seq"                # the last event sequence number published
OWNER_LEASE = "schedview:owner:leader"           # the leader lease (redis-py Lock): a token
OWNER_LEASE_TERM_SUFFIX = ":term"                # + on the lease key: bumped at every taking

# -- the pools process ------------------------------------------------------------------------
POOLS_CLAIMS_PREFIX = "schedview:pools:claims:"  # + pool name: list of claim requests
POOLS_REPLY_PREFIX = "schedview:pools:reply:"    # + request id: list holding its one reply
POOLS_STATUS = "schedview:pools:status"          # every pool's status (JSON)
POOLS_STATUS_TTL = 5.0                           # seconds: no status means no pools process

# -- the supervisor (`manage.py up`) ----------------------------------------------------------
SUPERVISOR_CHILDREN = "schedview:supervisor:children"   # its children's states (JSON list)
# The simulated cluster's fault episodes as `up` last read them (JSON), so the pages can
# say a warning is injected; expires when `up` stops reading them.
SIMCLUSTER_WEATHER = "schedview:simcluster:weather"
SIMCLUSTER_WEATHER_TTL = 10                      # seconds

# -- channel-layer groups the live pages join -------------------------------------------------
EVENTS_GROUP = "events"   # the owner's cache events and status, one message per flush
POOLS_GROUP = "pools"     # the pools process: "the pool panel changed"


def owner_reply(command_id: str) -> str:
    return OWNER_REPLY_PREFIX + command_id


def lease_term(lease_key: str) -> str:
    return lease_key + OWNER_LEASE_TERM_SUFFIX


def pool_claims(pool: str) -> str:
    return POOLS_CLAIMS_PREFIX + pool


def pool_reply(request_id: str) -> str:
    return POOLS_REPLY_PREFIX + request_id
