"""The database's tables: the read model the owner writes and the web reads, the history,
the audit trail, API tokens, health samples (models.py, migrations/)."""
