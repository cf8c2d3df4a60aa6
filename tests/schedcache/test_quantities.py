"""Kubernetes quantity strings, as the cache reads them: cpu in millicores rounded up,
memory / ephemeral storage / extended resources in whole units rounded up."""

import pytest

from schedcache import Cache

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

N1 = "node-1"

CPU = [
    ("100m", 100),
    ("250m", 250),
    ("1500m", 1500),
    ("0.5", 500),
    ("1", 1000),
    ("2", 2000),
    ("1.5", 1500),
    ("0.1", 100),
    (".5", 500),
    ("0", 0),
    ("1e3", 1_000_000),
    ("1k", 1_000_000),
    ("1Ki", 1_024_000),
    ("0.0001", 1),  # 0.1 millicore rounds up
    ("1u", 1),
    ("2500u", 3),
    ("100n", 1),
    ("1e-3", 1),
    ("1E2", 100_000),  # 'E' followed by digits is an exponent
]

MEMORY = [
    ("1Gi", 1024**3),
    ("512Mi", 512 * 1024**2),
    ("1G", 10**9),
    ("1e3", 1000),
    ("1k", 1000),
    ("1Ki", 1024),
    ("1M", 10**6),
    ("1Mi", 1024**2),
    ("1Ti", 1024**4),
    ("1T", 10**12),
    ("1P", 10**15),
    ("1Pi", 1024**5),
    ("1E", 10**18),  # exa
    ("1Ei", 1024**6),
    ("500", 500),
    ("128974848", 128974848),
    ("129e6", 129_000_000),
    ("123Mi", 128974848),
    ("1.5Gi", 1610612736),
    ("0.5Gi", 512 * 1024**2),
    ("100m", 1),  # 0.1 byte rounds up
    ("1500m", 2),
    ("2000m", 2),
    ("0", 0),
]


@pytest.mark.parametrize("text,millis", CPU)
def test_cpu_allocatable(text, millis):
    cache = Cache(ttl=0)
    ni = cache.add_node(b.node(N1, cpu=text))
    assert ni.allocatable.milli_cpu == millis


@pytest.mark.parametrize("text,millis", CPU)
def test_cpu_request(text, millis):
    cache = Cache(ttl=0)
    cache.add_pod(b.pod("p", N1, cpu=text, memory="1"))
    ni = cache.dump().nodes[N1]
    assert ni.requested.milli_cpu == millis
    assert ni.non_zero_requested.milli_cpu == millis


@pytest.mark.parametrize("text,value", MEMORY)
def test_memory_allocatable(text, value):
    cache = Cache(ttl=0)
    ni = cache.add_node(b.node(N1, memory=text))
    assert ni.allocatable.memory == value


@pytest.mark.parametrize("text,value", MEMORY)
def test_memory_request(text, value):
    cache = Cache(ttl=0)
    cache.add_pod(b.pod("p", N1, cpu="1", memory=text))
    assert cache.dump().nodes[N1].requested.memory == value


@pytest.mark.parametrize("text,value", MEMORY)
def test_ephemeral_storage(text, value):
    cache = Cache(ttl=0)
    ni = cache.add_node(b.node(N1, ephemeral=text))
    assert ni.allocatable.ephemeral_storage == value
    cache.add_pod(b.pod("p", N1, ephemeral=text))
    assert cache.dump().nodes[N1].requested.ephemeral_storage == value


@pytest.mark.parametrize(
    "name,text,value",
    [
        ("nvidia.com/gpu", "2", 2),
        ("nvidia.com/gpu", "1k", 1000),
        ("example.com/foo", "3", 3),
        ("example.com/foo", "500m", 1),
        ("hugepages-2Mi", "1Gi", 1024**3),
    ],
)
def test_scalar_resources(name, text, value):
    cache = Cache(ttl=0)
    ni = cache.add_node(b.node(N1, scalars={name: text}))
    assert dict(ni.allocatable.scalar_resources).get(name) == value
    cache.add_pod(b.pod("p", N1, extra={name: text}))
    assert dict(cache.dump().nodes[N1].requested.scalar_resources).get(name) == value


@pytest.mark.parametrize("text,value", [("110", 110), ("1k", 1000), ("0", 0)])
def test_allowed_pod_number(text, value):
    cache = Cache(ttl=0)
    ni = cache.add_node(b.node(N1, pods=text))
    assert ni.allocatable.allowed_pod_number == value


@pytest.mark.parametrize("text,millis", CPU)
def test_reference_parser_cpu(text, millis):
    """The tests' own quantity parser (used by the property tests) agrees with the table."""
    assert ref.milli_value(text) == millis


@pytest.mark.parametrize("text,value", MEMORY)
def test_reference_parser_memory(text, value):
    assert ref.int_value(text) == value
