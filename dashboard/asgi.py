"""The ASGI application daphne serves: Django views over HTTP, Channels consumers over websockets.

Django is set up (get_asgi_application) before anything imports models. The web
process pools its PostgreSQL connections (SCHEDVIEW_DB_POOL, settings.py) unless told
otherwise: its every page, socket login and live render is a short database call in a
worker thread, which otherwise opened a connection of its own (200 websocket viewers
connecting at once then outlasted daphne's 5 s handshake timeout).
"""
import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
os.environ.setdefault("SCHEDVIEW_DB_POOL", "16")   # above the process's threads that hold one
http_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from dashboard.web.events.consumers import EventsConsumer  # noqa: E402
from dashboard.web.live.consumers import HeaderConsumer, NoSuchSocket  # noqa: E402
from dashboard.web.nodes.consumers import (  # noqa: E402
    HeatMapConsumer, NodeDetailConsumer, NodesConsumer)
from dashboard.web.overview.consumers import OverviewConsumer  # noqa: E402
from dashboard.web.pending.consumers import PendingConsumer  # noqa: E402
from dashboard.web.pods.consumers import PodDetailConsumer, PodListConsumer  # noqa: E402
from dashboard.web.pools.consumers import PoolsConsumer  # noqa: E402
from dashboard.web.snapshot.consumers import SnapshotConsumer  # noqa: E402
from dashboard.web.statuses.consumers import StatusesConsumer  # noqa: E402
from dashboard.web.zones.consumers import ZonesConsumer  # noqa: E402

websocket_routes = [
    path("ws/header/", HeaderConsumer.as_asgi()),
    path("ws/overview/", OverviewConsumer.as_asgi()),
    path("ws/nodes/", NodesConsumer.as_asgi()),
    path("ws/nodes/<str:name>/", NodeDetailConsumer.as_asgi()),
    path("ws/heatmap/", HeatMapConsumer.as_asgi()),
    path("ws/zones/", ZonesConsumer.as_asgi()),
    path("ws/snapshot/", SnapshotConsumer.as_asgi()),
    path("ws/events/", EventsConsumer.as_asgi()),
    path("ws/pending/", PendingConsumer.as_asgi()),
    path("ws/pods/", PodListConsumer.as_asgi()),
    path("ws/pods/<str:uid>/", PodDetailConsumer.as_asgi()),
    path("ws/pools/", PoolsConsumer.as_asgi()),
    path("ws/statuses/", StatusesConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),   # last: every other path
]

application = ProtocolTypeRouter({
    "http": http_application,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_routes))),
})

# What was loaded to serve (Django, the app, the routes) lives as long as the process: it is
# moved out of the collector's way, and the young generation is collected less often. A
# large page's collections walked all of it: the nodes page's p99 was 2.7 times its p50 on
# a quiet machine (bench/page_bench.py at 5,000 nodes: 147 -> 72 ms, the heat map 107 -> 38).
gc.collect()
gc.freeze()
gc.set_threshold(50_000, 20, 100)
