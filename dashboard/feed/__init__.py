"""The live feed: the cache owner and what feeds it (reflectors) and talks to it (commands)."""
