"""`manage.py up`: the whole dashboard on this machine (what `make run` starts).

It starts an embedded Redis unless REDIS_URL is set, migrates the database,
collects static files and serves the ASGI app with daphne. The long-running
parts are children of one Supervisor: Ctrl-C (or SIGTERM) stops them all,
and if one dies the others are stopped and the command fails, naming it.
"""
import os
import signal
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from dashboard import embedded_redis
from dashboard.supervisor import Child, Supervisor

HOST = "127.0.0.1"


def web(port: int) -> Child:
    return Child("web", [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(port),
                         "dashboard.asgi:application"])


class Command(BaseCommand):
    help = "Run the whole dashboard: embedded Redis (unless REDIS_URL is set), migrations, web."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")),
                            help="HTTP port on 127.0.0.1 (default: $PORT or 8000)")

    def handle(self, *args, port, **options):
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops us as Ctrl-C does
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        try:
            with Supervisor() as supervisor:
                if settings.EMBEDDED_REDIS_SOCKET:
                    redis = supervisor.start(
                        Child("redis", embedded_redis.command(settings.EMBEDDED_REDIS_SOCKET)))
                    embedded_redis.wait_until_ready(settings.REDIS_URL, redis)
                call_command("migrate", interactive=False)
                call_command("collectstatic", interactive=False, verbosity=0)
                supervisor.start(web(port))
                self.stdout.write(f"schedview: http://{HOST}:{port}/  (Ctrl-C stops it)")
                child, code = supervisor.wait()
        except KeyboardInterrupt:
            self.stdout.write("schedview: stopped")
            return
        except embedded_redis.NotReady as error:
            raise CommandError(str(error)) from None
        raise CommandError(f"{child.name} exited with code {code}; stopped the others")
