"""`manage.py apitoken <username> [--days N]`: make a REST API bearer token for a user and
print it once."""
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from dashboard.models import ApiToken, AuditAction


def positive_days(text: str) -> float:
    days = float(text)
    if not 0 < days < 100_000:   # a finite, positive span (NaN fails both comparisons)
        raise ValueError(text)
    return days


class Command(BaseCommand):
    help = ("Make a bearer token for the REST API, acting as an existing user; prints it once. "
            "It stops working after --days, when the user is deactivated or their password "
            "changes, or when revoked (manage.py revoketoken).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for, to tell tokens apart")
        parser.add_argument("--days", type=positive_days,
                            help="days the token works (default: until revoked)")

    def handle(self, username, name, days, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r} "
                               "(make one with `manage.py createuser`)")
        expires = timezone.now() + timedelta(days=days) if days else None
        with transaction.atomic():   # no token without its audit row
            row, token = ApiToken.issue(user, name, expires)
            AuditAction.objects.create(
                actor="manage.py apitoken", action="issue_token", ok=True, message=name,
                target=f"token {row.pk} of {username}",
                details={"expires": expires.isoformat() if expires else None})
        self.stdout.write(token)
