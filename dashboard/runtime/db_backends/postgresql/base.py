from django.db.backends.postgresql import base

from dashboard.runtime.db_backends import UnloggedStatements


class DatabaseWrapper(UnloggedStatements, base.DatabaseWrapper):
    pass
