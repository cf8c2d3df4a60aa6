"""How one process asks another over Redis: the web and the worker the owner (owner_client),
the web the pools process (pools_transport, whose server end the pools process runs)."""
