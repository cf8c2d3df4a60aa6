"""What outlives the owner's memory: the read model, the history and the audit trail.

The cache lives in the owner process. It writes these tables in batches so
the web can filter and page pods in SQL, and so that a pod's whole life and
every operator action survive restarts.
"""
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone

# What acting on pods (forget, expire, assume, claim) needs: AuditAction.Meta declares it.
ACT_PERMISSION = "dashboard.act_on_pods"


class PodState(models.TextChoices):
    PENDING = "Pending", "Pending (not in the cache, not bound)"
    ASSUMED = "Assumed", "Assumed"
    ADDED = "Added", "Added"
    EXPIRED = "Expired", "Expired (assumed, never confirmed)"
    FORGOTTEN = "Forgotten", "Forgotten (bind failed)"


class PodRecord(models.Model):
    """One pod as the owner last saw it: in the cache, pending, or just expired/forgotten."""

    uid = models.CharField(max_length=64, primary_key=True)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    node = models.CharField(max_length=253, blank=True)
    zone = models.CharField(max_length=253, blank=True)
    state = models.CharField(max_length=16, choices=PodState.choices)
    binding_finished = models.BooleanField(default=False)
    assumed_at = models.DateTimeField(null=True, blank=True)  # when an assumed pod was assumed
    deadline = models.FloatField(null=True, blank=True)  # epoch seconds an assumed pod expires
    phase = models.CharField(max_length=32, blank=True)
    resource_version = models.CharField(max_length=64, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    milli_cpu = models.BigIntegerField(default=0)
    memory = models.BigIntegerField(default=0)
    # extended resources requested (name -> amount, e.g. {"nvidia.com/gpu": 64})
    scalar_resources = models.JSONField(default=dict, blank=True)
    priority = models.IntegerField(default=0)
    seq = models.BigIntegerField(default=0)  # the sequence number of its latest transition
    changed_at = models.DateTimeField(default=timezone.now)
    owner_epoch = models.BigIntegerField(default=0)  # which owner wrote it (stale rows pruned)

    class Meta:
        indexes = [
            models.Index(fields=["owner_epoch"], name="pod_owner_epoch"),
            models.Index(fields=["state", "binding_finished"], name="pod_state_bound"),
            models.Index(fields=["state", "node"], name="pod_state_node"),
            models.Index(fields=["state", "namespace", "name"], name="pod_state_ns_name"),
            models.Index(fields=["namespace", "name"], name="pod_ns_name"),
            models.Index(fields=["node", "namespace", "name"], name="pod_node_ns_name"),
            models.Index(fields=["zone", "namespace", "name"], name="pod_zone_ns_name"),
            models.Index(fields=["name"], name="pod_name"),
            # "recently changed first", overall and within a state (stuck assumed pods)
            models.Index(fields=["changed_at", "uid"], name="pod_changed"),
            models.Index(fields=["state", "changed_at", "uid"], name="pod_state_changed"),
        ]

    def __str__(self):
        return f"{self.namespace}/{self.name} ({self.state})"


class NodeRecord(models.Model):
    """One NodeInfo: the node's aggregates, as of generation."""

    name = models.CharField(max_length=253, primary_key=True)
    zone = models.CharField(max_length=253, blank=True)
    tree_index = models.IntegerField(default=0)  # position in NodeTree.list()
    has_node = models.BooleanField(default=True)  # False: deleted, pods still on it
    generation = models.BigIntegerField(default=0)
    pods = models.IntegerField(default=0)
    requested = models.JSONField(default=dict)
    non_zero_requested = models.JSONField(default=dict)
    allocatable = models.JSONField(default=dict)
    host_ports = models.JSONField(default=list)
    images = models.IntegerField(default=0)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)       # [{key, value, effect}]
    conditions = models.JSONField(default=list, blank=True)   # [{type, status, reason, ...}]
    unschedulable = models.BooleanField(default=False)
    # requested / allocatable, in percent, for sorting, filtering and the heat map in SQL
    # (null: the node has none of it, as most have no GPUs)
    cpu_percent = models.FloatField(null=True, blank=True)
    memory_percent = models.FloatField(null=True, blank=True)
    gpu_percent = models.FloatField(null=True, blank=True)
    changed_at = models.DateTimeField(default=timezone.now)
    owner_epoch = models.BigIntegerField(default=0, db_index=True)

    class Meta:
        indexes = [
            # The heat map's order with its figures: an index-only scan, not 20,000 rows
            # read and sorted by text (issue 26).
            models.Index(fields=["zone", "tree_index", "name", "cpu_percent", "memory_percent",
                                 "gpu_percent"], name="node_heat_order"),
            # the snapshot page's "most recently changed first" and "changed since"
            models.Index(fields=["-generation", "name"], name="node_generation"),
        ]


class ZoneTotal(models.Model):
    """The NodeRecords of a zone (in the NodeTree or out of it: tree_index < 0) summed: how
    many, how many without their Node, their requested and allocatable CPU and memory.
    Kept by triggers on NodeRecord's table as PodStateCount is (migration 0018): the
    overview and the zones page read a row a zone instead of every node's JSON (issue 26)."""

    zone = models.CharField(max_length=253, blank=True)
    in_tree = models.BooleanField(default=True)
    nodes = models.BigIntegerField(default=0)
    missing = models.BigIntegerField(default=0)
    cpu_requested = models.BigIntegerField(default=0)
    cpu_allocatable = models.BigIntegerField(default=0)
    memory_requested = models.BigIntegerField(default=0)
    memory_allocatable = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["zone", "in_tree"],
                                               name="zone_total_key")]

    def __str__(self):
        where = "" if self.in_tree else " (out of the tree)"
        return f"{self.zone or '(no zone)'}{where}: {self.nodes}"


class PodStateCount(models.Model):
    """How many PodRecords are in a state, with their binding finished or not: kept by
    triggers on PodRecord's table, in the transaction that changes its rows, whoever writes
    them (migration 0018). The overview and health read these few rows instead of counting
    600,000 index entries every render (issue 26)."""

    state = models.CharField(max_length=16, choices=PodState.choices)
    binding_finished = models.BooleanField(default=False)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["state", "binding_finished"],
                                               name="pod_state_count_key")]

    def __str__(self):
        return f"{self.state}{' (binding finished)' if self.binding_finished else ''}: {self.n}"


class Transition(models.Model):
    """One event of the cache, in sequence order: the history behind every timeline."""

    seq = models.BigIntegerField(unique=True)
    at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=32)
    key = models.CharField(max_length=253, db_index=True)  # pod uid, or node name
    namespace = models.CharField(max_length=253, blank=True)
    name = models.CharField(max_length=253, blank=True)
    node = models.CharField(max_length=253, blank=True)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16, blank=True)
    cause = models.CharField(max_length=16)  # watch, relist, bind, reaper, operator, owner
    actor = models.CharField(max_length=150, blank=True)
    # Why, in the words of whoever refused: a failed bind's API server answer (status and
    # message), an operator's reason, the bind deadline. Empty for most transitions.
    detail = models.TextField(blank=True, default="")
    generation = models.BigIntegerField(default=0)
    # What replaying the transition needs that the columns above lack (a pod's requests
    # and priority, a node's zone and allocatable: dashboard/readmodel/cluster_state.py);
    # null for the kinds that need nothing more (removals, forgets, expiries).
    replay = models.JSONField(null=True, blank=True, default=None)

    class Meta:
        ordering = ["seq"]
        # The overview counts the rare kinds (expiries, forgets) of the last hour: at 200
        # events a second that hour is 700,000 rows, scanned for a handful without it.
        indexes = [models.Index(fields=["kind", "at"], name="transition_kind_at")]


class Checkpoint(models.Model):
    """The whole cache at one sequence number, compressed (cluster_state.ClusterState's
    encoding): the moment a reconstruction of the past starts from, so that it replays
    minutes of transitions instead of the whole history. Written by the owner every
    SCHEDVIEW_CHECKPOINT_PERIOD; pruned with the history it needs."""

    seq = models.BigIntegerField(unique=True)
    at = models.DateTimeField(db_index=True)
    pods = models.IntegerField()
    nodes = models.IntegerField()
    snapshot_generation = models.BigIntegerField(default=0)
    state = models.BinaryField()

    class Meta:
        ordering = ["seq"]


class LeaseTerm(models.Model):
    """The leader lease's term (one row): bumped by every owner that takes the lease, and
    checked by every write of an owner in the same transaction (`dashboard/owner/fence.py`),
    so an owner whose term has passed writes nothing. Kept here, not only in Redis, so an
    emptied Redis cannot make a term run backwards."""

    term = models.BigIntegerField(default=0)

    @classmethod
    def current(cls) -> int:
        """The term now (0 before any owner took the lease)."""
        return cls.objects.filter(pk=1).values_list("term", flat=True).first() or 0


class PrunedHistory(models.Model):
    """How far the history was pruned (one row): a reader asking for transitions below
    `below_seq` learns they are gone rather than silently getting fewer."""

    below_seq = models.BigIntegerField(default=0)  # every transition numbered below is pruned
    at = models.DateTimeField(null=True)           # when the last pruning ran
    transitions = models.BigIntegerField(default=0)  # pruned in all, for the operator

    @classmethod
    def floor(cls) -> int:
        """The lowest number the history may still hold (0: nothing was ever pruned)."""
        return cls.objects.filter(pk=1).values_list("below_seq", flat=True).first() or 0


class AuditAction(models.Model):
    """Every action a person or tool asked for, refused ones included."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=32)
    target = models.CharField(max_length=253)
    node = models.CharField(max_length=253, blank=True)
    ok = models.BooleanField()
    message = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at"]
        # Viewing needs a login; acting on pods (forget, expire, assume, claim) needs this.
        permissions = [("act_on_pods", "Can forget, expire and assume pods")]


class ComparerRun(models.Model):
    """A cache/cluster comparison; the latest one is what the dashboard shows."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    clean = models.BooleanField()
    report = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")   # why the comparison could not be made


class SnapshotSample(models.Model):
    """The owner's snapshot over time: the generation chart and what changed."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    generation = models.BigIntegerField()
    cache_generation = models.BigIntegerField()
    changed_nodes = models.JSONField(default=list)  # most recently changed first


def password_stamp(user) -> str:
    """A digest of the user's password as stored: it changes whenever the password does
    (set_password, changepassword, an unusable one), however the row was written."""
    return hashlib.sha256(user.password.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for tools using the REST API, acting as its user.

    Only a digest is stored: a leaked database does not leak working tokens.
    The token itself is shown once, when it is made (`manage.py apitoken`).
    A token works until it `expires` (if it was given an expiry), and only while its
    user is active with the password it was issued under, as a session does: it
    carries the user's `password_stamp` of then. A user saved inactive or with another
    password loses those tokens for good (`revoke_stale_tokens`), so reactivating
    the account does not revive them.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    expires = models.DateTimeField(null=True, blank=True)   # None: never
    password_stamp = models.CharField(max_length=64)

    PREFIX = "sv_"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(cls, user, name: str = "", expires=None) -> tuple["ApiToken", str]:
        """Make a token for `user` (working until `expires`, a datetime, if given); returns
        the row and the token, which is not kept."""
        token = cls.PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name, digest=cls.digest_of(token),
                                 expires=expires, password_stamp=password_stamp(user))
        return row, token

    def refusal(self, now) -> str:
        """Why the token no longer works ("" while it does)."""
        if not self.user.is_active:
            return "user deactivated"
        if self.password_stamp != password_stamp(self.user):
            return "password changed"
        if self.expires is not None and now >= self.expires:
            return "expired"
        return ""

    def __str__(self):
        return f"{self.user} {self.name or self.pk}"


def revoke_stale_tokens(user, actor: str) -> list[ApiToken]:
    """Delete the user's tokens that a deactivation or a new password ended (an expired
    one stays listed), each with an audit row; returns them."""
    now = timezone.now()
    stale = [(token, token.refusal(now)) for token in user.api_tokens.all()]
    stale = [(token, why) for token, why in stale if why and why != "expired"]
    if stale:
        AuditAction.objects.bulk_create(
            AuditAction(actor=actor, action="revoke_token", ok=True, message=why,
                        target=f"token {token.pk} of {user.get_username()}")
            for token, why in stale)
        ApiToken.objects.filter(pk__in=[token.pk for token, _ in stale]).delete()
    return [token for token, _ in stale]


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def _user_saved(sender, instance, created, raw=False, update_fields=None, **kwargs):
    """Every save of a user (changepassword, a deactivation, the admin) ends the tokens
    its new state refuses; a login's save of last_login alone changes neither. A login
    that rehashes the same password with the preferred hasher (Django's check_password
    saves only the password, having cleared the new one it keeps in `_password`, "hash
    upgrades shouldn't be considered password changes") moves the tokens' stamps along."""
    if created or raw or (update_fields and not {"password", "is_active"} & set(update_fields)):
        return
    if set(update_fields or ()) == {"password"} and instance._password is None:
        instance.api_tokens.update(password_stamp=password_stamp(instance))
        return
    revoke_stale_tokens(instance, actor=f"change of user {instance.get_username()}")


class HealthSample(models.Model):
    """The health and count figures at one moment, taken by Celery beat's `sample_health`
    every SCHEDVIEW_SAMPLE_PERIOD: the overview's charts over time, and the "pending
    then" the stalled-scheduler check compares with. Counts of transitions are those
    written in the `period` seconds before `at` (numbered above the previous sample's
    `seq`); a figure no one could tell is null."""

    at = models.DateTimeField(db_index=True)
    period = models.FloatField()
    level = models.CharField(max_length=8)            # ok, warn or fail (dashboard.readmodel.health)
    problems = models.JSONField(default=dict)         # the checks not ok: name -> level
    pending = models.IntegerField(null=True)
    assumed = models.IntegerField(null=True)
    added = models.IntegerField(null=True)
    assumes = models.IntegerField(default=0)
    binds = models.IntegerField(default=0)            # bindings finished by the bind path
    bind_failures = models.IntegerField(default=0)    # pods the bind path forgot
    expiries = models.IntegerField(default=0)
    forgets = models.IntegerField(default=0)          # every forget, the bind path's included
    feed_backlog = models.IntegerField(null=True)
    feed_lag = models.FloatField(null=True)           # seconds (dashboard/owner/feed_lag.py)
    read_model_backlog = models.IntegerField(null=True)
    binds_stuck = models.IntegerField(null=True)
    seq = models.BigIntegerField(null=True)           # the highest transition counted so far
    # The earliest time stamped on a transition this sample counted: a transition lands a
    # flush after it happened, so it may predate the period (null: none counted).
    counted_from = models.DateTimeField(null=True)
