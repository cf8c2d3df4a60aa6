"""What every live page shares: one subscription per process and group (hub), the base consumer
and the header's socket."""
