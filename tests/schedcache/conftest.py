"""Hypothesis profiles for the schedcache tests.

Default: quick (well under 20 s for the whole directory). HYPOTHESIS_PROFILE=thorough
runs many more and longer random operation sequences.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "schedcache-default",
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "thorough",
    max_examples=600,
    stateful_step_count=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
