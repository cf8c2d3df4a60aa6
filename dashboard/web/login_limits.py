"""How many wrong passwords a login may follow: django-axes' database handler with a limit
of its own for each way failures are counted.

AXES_LOCKOUT_PARAMETERS counts, in this order: a username from one address (a person
mistyping: AXES_FAILURE_LIMIT), a username from any address (a guesser rotating
addresses: SCHEDVIEW_LOGIN_USER_FAILURES) and an address for any username (a guesser
spraying usernames: SCHEDVIEW_LOGIN_ADDRESS_FAILURES). Axes compares the largest of its
counts with one limit; here each count meets its own, and one at its limit locks the
login out as the pair's would. Every count is of the failures within AXES_COOLOFF_TIME,
so a lock ends by itself.
"""
from django.conf import settings
from django.db.models import Sum

from axes.handlers.database import AxesDatabaseHandler


class LoginLimits(AxesDatabaseHandler):

    def get_failures(self, request, credentials=None) -> int:
        """The pair's failures, or AXES_FAILURE_LIMIT once a wider count reached its limit
        (what axes compares with AXES_FAILURE_LIMIT)."""
        pair, per_user, per_address = (
            attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            for attempts in self.get_user_attempts(request, credentials))
        if (per_user >= settings.SCHEDVIEW_LOGIN_USER_FAILURES
                or per_address >= settings.SCHEDVIEW_LOGIN_ADDRESS_FAILURES):
            return max(pair, settings.AXES_FAILURE_LIMIT)
        return pair

    def reset_user_attempts(self, request, credentials=None) -> int:
        """A login clears its own username's failures from its own address only: with axes'
        reset, logging into one's own account wiped the address's failures against
        every other username, and so its count."""
        pair = self.filter_user_attempts(request, credentials)[0]
        return pair.delete()[0]
