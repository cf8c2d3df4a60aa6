"""The zones page."""
