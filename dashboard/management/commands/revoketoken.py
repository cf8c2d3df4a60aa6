"""`manage.py revoketoken ID...` or `--user NAME`: REST API tokens stop working at once."""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from dashboard.models import ApiToken, AuditAction


class Command(BaseCommand):
    help = ("Revoke REST API bearer tokens by id (as `manage.py apitokens` lists them), or "
            "every token of a user; the next call with one is a 401. Each is in the audit.")

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=int, metavar="ID")
        parser.add_argument("--user", help="revoke every token of this user")

    def handle(self, ids, user, **options):
        if bool(ids) == (user is not None):
            raise CommandError("name token ids or --user (one of them)")
        tokens = ApiToken.objects.select_related("user")
        tokens = tokens.filter(pk__in=ids) if ids else tokens.filter(user__username=user)
        with transaction.atomic():
            found = list(tokens)
            missing = set(ids) - {token.pk for token in found}
            if missing:   # nothing revoked: a typo must not half-do a list
                raise CommandError(f"no token with id {', '.join(map(str, sorted(missing)))}")
            if not found:
                raise CommandError(f"user {user!r} has no token")
            AuditAction.objects.bulk_create(
                AuditAction(actor="manage.py revoketoken", action="revoke_token", ok=True,
                            target=f"token {token.pk} of {token.user.get_username()}",
                            message=token.name) for token in found)
            ApiToken.objects.filter(pk__in=[token.pk for token in found]).delete()
        for token in found:
            self.stdout.write(f"revoked token {token.pk} of {token.user.get_username()}"
                              f"{f' ({token.name})' if token.name else ''}")
