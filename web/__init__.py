"""The web process (daphne serving schedview.asgi): pages, live consumers, the REST API."""
