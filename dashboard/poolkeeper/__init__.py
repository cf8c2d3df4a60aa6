"""The warm-pools process (`manage.py pools`): a warmpool.PoolScheduler per pool on the
cluster feed, serving the web's claims over Redis (dashboard/clients/pools_transport.py; its panel
and REST: dashboard/web/pools/)."""
