"""The web process (daphne serving dashboard.asgi): pages, live consumers, the REST API."""
