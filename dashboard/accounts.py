"""Who may do what: two roles, kept as Django groups, and how passwords are hashed.

    viewer    sees every page and reads the REST API; acts on nothing (what a new account is)
    operator  also forgets, expires and assumes pods and claims warm-pool pods
              (the permission dashboard.act_on_pods)

Why groups: a role is then one row a user belongs to, which `manage.py createuser NAME
--role ...` sets and any Django tool shows; the permission checks stay `has_perm`.
The groups are made (or mended) whenever an account is given a role, so a database
needs no migration for them.
"""
import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.contrib.auth.models import Group, Permission
from django.db import transaction

VIEWER, OPERATOR = "viewer", "operator"
ROLES = {VIEWER: (), OPERATOR: ("act_on_pods",)}   # role -> its permissions' codenames
DEFAULT_ROLE = VIEWER


class Argon2idHasher(Argon2PasswordHasher):
    """Argon2id at OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): a login
    hashes in tens of milliseconds where Django's PBKDF2 (a million rounds) took a second
    of a busy 2-core machine, and memory-hard hashing resists GPU guessing better. Older
    PBKDF2 hashes still verify and are rehashed at the next login."""
    algorithm = "argon2"   # the hashes it makes read as Django's Argon2's own
    time_cost = 2
    memory_cost = 19 * 1024   # KiB
    parallelism = 1


def role_group(role: str) -> Group:
    """The role's group with exactly its permissions (made or mended)."""
    if role not in ROLES:
        raise ValueError(f"no role {role!r}: one of {', '.join(ROLES)}")
    group, _ = Group.objects.get_or_create(name=role)
    group.permissions.set(Permission.objects.filter(content_type__app_label="dashboard",
                                                    codename__in=ROLES[role]))
    return group


def set_role(user, role: str) -> None:
    """The user's role becomes `role`: it joins that group and leaves the other roles'."""
    with transaction.atomic():
        group = role_group(role)
        user.groups.remove(*Group.objects.filter(name__in=set(ROLES) - {role}))
        user.groups.add(group)


def create_user(username: str, role: str = DEFAULT_ROLE, password: str | None = None):
    """A new active account with `role`; (user, the password: `password`, or a random one
    when None)."""
    password = password if password is not None else secrets.token_urlsafe(12)
    with transaction.atomic():
        user = get_user_model().objects.create_user(username, password=password)
        set_role(user, role)
    return user, password
