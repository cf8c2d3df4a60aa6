"""Warm pools in the dashboard: the pools process (`manage.py pools`) that runs a
warmpool.PoolScheduler per pool on the cluster feed, the claim transport over Redis,
the REST router and the live pool panel."""
