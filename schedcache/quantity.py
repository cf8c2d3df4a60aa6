"""Kubernetes quantity strings ("100m", "1Gi", "1e3") as exact numbers.

Resources are compared and summed in integers (millicores, bytes), so every
string is parsed exactly (a Fraction) and rounded up the way
resource.Quantity's MilliValue()/Value() do. Parsing is memoised: a cluster
repeats the same few hundred strings across all its pods.
"""
from fractions import Fraction
from functools import lru_cache
import math
import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_MAX_LENGTH = 128
_MAX_EXPONENT = 64  # 1e64 is far beyond any real resource; the bound keeps parsing cheap
_FORM = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)")


@lru_cache(maxsize=8192)
def parse_quantity(text) -> Fraction:
    """The exact value of a quantity; ValueError for anything Kubernetes rejects."""
    if isinstance(text, bool):
        raise ValueError(f"invalid quantity {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ValueError(f"invalid quantity {text!r}")
        return Fraction(text)
    if not isinstance(text, str):
        raise ValueError(f"invalid quantity {text!r}")
    if len(text) > _MAX_LENGTH:
        raise ValueError(f"invalid quantity {text[:20]!r}...: longer than {_MAX_LENGTH} characters")
    match = _FORM.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"invalid quantity {text!r}")
    number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = int(suffix[1:])
        if exponent > _MAX_EXPONENT:
            raise ValueError(f"invalid quantity {text!r}: exponent out of range")
        # Any smaller exponent rounds up to the same whole units and millis.
        return value * Fraction(10) ** max(exponent, -_MAX_EXPONENT)
    return value * _DECIMAL[suffix]


@lru_cache(maxsize=8192)
def milli_value(text) -> int:
    """Thousandths, rounded up (cpu in millicores)."""
    return math.ceil(parse_quantity(text) * 1000)


@lru_cache(maxsize=8192)
def value(text) -> int:
    """Whole units, rounded up (bytes, counts)."""
    return math.ceil(parse_quantity(text))
