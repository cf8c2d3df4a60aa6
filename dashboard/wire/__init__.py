"""What the processes say to each other through Redis, and nothing else.

The cache owner, the web, the Celery workers, the pools process and the supervisor
never import each other's code to talk: each imports the names and shapes of what
they exchange from here. No Django: a process that has no settings can use it.

    keys.py      every Redis key and channel-layer group, with their lifetimes
    clients.py   the per-process redis-py client, and what an outage raises
    requests.py  one request/reply protocol over Redis lists (client and server)
    commands.py  the owner's commands on it: their shape, and the errors they answer
    pools.py     the pools' claims on it, and the pools' published status
    live.py      the messages sent to the live pages' groups
    lease.py     the leader lease's token: who leads
"""
