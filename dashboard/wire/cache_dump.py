"""What the cache dump's asker and the owner agree on: the dump's two parts (nodes paged
by name, pending pods paged by uid) and how much one `dump_cache` answer may hold."""

NODES, PENDING = "nodes", "pending"
PARTS = (NODES, PENDING)
DEFAULT_LIMIT = 100     # nodes (each with up to ~110 pods) or pending pods in one answer
MAX_LIMIT = 500
