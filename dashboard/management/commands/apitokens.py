"""`manage.py apitokens [--user NAME]`: the REST API's tokens, with when each was last used."""
from django.core.management.base import BaseCommand

from dashboard.models import ApiToken


class Command(BaseCommand):
    help = ("List the REST API's bearer tokens (id, user, name, made, last used; never the "
            "token itself, which is not kept). Revoke one with `manage.py revoketoken ID`.")

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user's tokens")

    def handle(self, user, **options):
        tokens = ApiToken.objects.select_related("user").order_by("pk")
        if user is not None:
            tokens = tokens.filter(user__username=user)
        self.stdout.write("id\tuser\tname\tmade\tlast used")
        for token in tokens:
            last_used = token.last_used.isoformat(timespec="seconds") if token.last_used else "never"
            self.stdout.write(f"{token.pk}\t{token.user.get_username()}\t{token.name or '-'}\t"
                              f"{token.created.isoformat(timespec='seconds')}\t{last_used}")
