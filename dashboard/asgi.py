"""The ASGI application daphne serves: Django views over HTTP, Channels consumers over websockets.

Django is set up (get_asgi_application) before anything imports models.
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
http_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

application = ProtocolTypeRouter({
    "http": http_application,
    # The live views' consumers are routed here in the next issue.
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter([]))),
})
