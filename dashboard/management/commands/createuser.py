"""`manage.py createuser NAME [--role viewer|operator]`: an account with a role.

A new account is a viewer unless told otherwise (dashboard/accounts.py). The password
is asked for twice on a terminal, read from standard input with --password-stdin, or
made up and printed once with --generate. --update changes an existing account's role
and leaves its password alone.
"""
import getpass
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from dashboard.accounts import DEFAULT_ROLE, ROLES, create_user, set_role


class Command(BaseCommand):
    help = ("Make an account with a role: viewer (read-only, the default) or operator "
            "(may forget, expire and assume pods).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(ROLES), default=None,
                            help=f"default: {DEFAULT_ROLE} (read-only)")
        way = parser.add_mutually_exclusive_group()
        way.add_argument("--password-stdin", action="store_true",
                         help="read the password from the first line of standard input")
        way.add_argument("--generate", action="store_true",
                         help="make up a password and print it once")
        way.add_argument("--update", action="store_true",
                         help="the account exists: set its role, keep its password")

    def handle(self, username, role, password_stdin, generate, update, **options):
        users = get_user_model().objects
        existing = users.filter(username=username).first()
        if update:
            if existing is None:
                raise CommandError(f"no account named {username!r}")
            set_role(existing, role or DEFAULT_ROLE)
            self.stdout.write(f"{username} is now a {role or DEFAULT_ROLE}")
            return
        if existing is not None:
            raise CommandError(f"an account named {username!r} exists; --update sets its role")
        if not username.strip() or len(username) > 150:
            raise CommandError("a username is 1 to 150 characters")
        password = None if generate else self._password(username, password_stdin)
        _, password = create_user(username, role or DEFAULT_ROLE, password)
        said = f", password {password}" if generate else ""
        self.stdout.write(f"made {username}, a {role or DEFAULT_ROLE}{said}")

    def _password(self, username: str, from_stdin: bool) -> str:
        if from_stdin:
            password = sys.stdin.readline().rstrip("\n")
        elif sys.stdin.isatty():
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ")
        else:
            raise CommandError("no terminal to ask a password on: give --password-stdin or "
                               "--generate")
        try:
            validate_password(password, get_user_model()(username=username))
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        return password
