"""The events page: the transition history and its live stream."""
