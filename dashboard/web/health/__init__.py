"""The health banner, the overview's charts, and the web's own probes and /metrics."""
