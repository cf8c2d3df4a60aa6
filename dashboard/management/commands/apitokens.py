"""`manage.py apitokens [--user NAME]`: the REST API's tokens, with when each was last used
and whether it still works."""
from django.core.management.base import BaseCommand
from django.utils import timezone

from dashboard.models import ApiToken


def _when(moment, otherwise: str) -> str:
    return moment.isoformat(timespec="seconds") if moment else otherwise


class Command(BaseCommand):
    help = ("List the REST API's bearer tokens (id, user, name, made, expires, last used "
            "(to the minute), and \"ok\" or why it no longer works; never the token itself, "
            "which is not kept). Revoke one with `manage.py revoketoken ID`.")

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user's tokens")

    def handle(self, user, **options):
        tokens = ApiToken.objects.select_related("user").order_by("pk")
        if user is not None:
            tokens = tokens.filter(user__username=user)
        now = timezone.now()
        self.stdout.write("id\tuser\tname\tmade\texpires\tlast used\tstate")
        for token in tokens:
            self.stdout.write("\t".join([
                str(token.pk), token.user.get_username(), token.name or "-",
                _when(token.created, ""), _when(token.expires, "never"),
                _when(token.last_used, "never"), token.refusal(now) or "ok"]))
