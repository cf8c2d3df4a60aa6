"""`manage.py apitoken <username>`: make a REST API bearer token for a user and print it once."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dashboard.models import ApiToken


class Command(BaseCommand):
    help = "Make a bearer token for the REST API, acting as an existing user; prints it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for, to tell tokens apart")

    def handle(self, username, name, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r} (make one with `manage.py createuser`)")
        self.stdout.write(ApiToken.issue(user, name)[1])
