from django.db.backends.sqlite3 import base

from dashboard.runtime.db_backends import UnloggedStatements


class DatabaseWrapper(UnloggedStatements, base.DatabaseWrapper):
    pass
