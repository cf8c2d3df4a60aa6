"""The warm-pools process (`manage.py pools`): a warmpool.PoolScheduler per pool on the
cluster feed, serving the web's claims over Redis (common/pools_transport.py; its panel
and REST: web/pools/)."""
