"""Middleware: bodies too large (413), the database down (503)."""
