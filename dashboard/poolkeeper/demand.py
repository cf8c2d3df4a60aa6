"""Synthetic claim traffic for the embedded default: a steady rate of claims per pool, so
the pool panel shows dispatches, waits and expiries without anyone calling the API.

    --demand web=3,batch=0.5      (claims per second; each waits up to DEMAND_TIMEOUT)
"""
import threading

from warmpool import ClaimOptions, ClaimRequest

DEMAND_TIMEOUT = 5.0


def parse_demand(text: str) -> dict:
    """"web=3,batch=0.5" -> {"web": 3.0, "batch": 0.5}; ValueError says what is wrong."""
    rates = {}
    for part in filter(None, (text or "").split(",")):
        pool, sep, rate = part.partition("=")
        try:
            value = float(rate)
        except ValueError:
            value = -1.0
        if not sep or not pool or value <= 0:
            raise ValueError(f"not POOL=CLAIMS_PER_SECOND: {part!r}")
        rates[pool] = value
    return rates


def run_demand(scheduler_of, rates: dict, stop: threading.Event) -> list:
    """One daemon thread per pool enqueueing claims at its rate until `stop` is set."""
    threads = []
    for pool, rate in rates.items():
        def claims(pool=pool, gap=1.0 / rate):
            while not stop.wait(gap):
                scheduler = scheduler_of(pool)
                scheduler.enqueue(ClaimRequest(
                    ClaimOptions(labels={"schedview.io/claimed-by": "demo"}),
                    scheduler.clock() + DEMAND_TIMEOUT, lambda result: None))
        thread = threading.Thread(target=claims, name=f"demand-{pool}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads
