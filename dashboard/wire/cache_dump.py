"""What the cache dump's asker and the owner agree on: the dump's two parts (nodes paged
by name, pending pods paged by uid) and how much one `dump_cache` answer may hold: a node
with its pods is about 4.5 KB at 30 pods, 16 KB at 110 (bench/cache_dump_bench.py), so a
page of 50 stays under 1 MB and the largest under about 3 MB."""

NODES, PENDING = "nodes", "pending"
PARTS = (NODES, PENDING)
DEFAULT_LIMIT = 50      # nodes or pending pods in one answer
MAX_LIMIT = 200
