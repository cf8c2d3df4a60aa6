"""The overview page."""
