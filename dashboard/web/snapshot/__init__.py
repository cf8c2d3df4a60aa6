"""The snapshot page."""
