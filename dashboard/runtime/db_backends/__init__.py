"""Django's database backends, keeping no log of statements outside a test's capture.

Why: while DEBUG is on (the embedded default runs so) Django keeps each connection's last
9,000 statements as text, parameters inlined. The owner's writer sends upserts of
thousands of rows and checkpoints of the whole cache as bytes: at 5,000 nodes and 150,000
pods its log grew by 25 MB in the two minutes after the sync, and turning a checkpoint's
bytes into text costs its CPU besides. Nothing reads that log; a test's
CaptureQueriesContext (django_assert_num_queries) still sees every statement.
"""


class UnloggedStatements:
    """Mixed into a backend's DatabaseWrapper: statements are logged only when forced."""

    @property
    def queries_logged(self) -> bool:
        return self.force_debug_cursor
