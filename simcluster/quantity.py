"""Kubernetes resource quantities ("250m", "0.5", "1Gi", "1G", "128974848").

Needed twice: the generator keeps node totals below capacity, and the API
server computes a pod's qosClass (requests equal to limits needs "1" == "1000m").
"""

from decimal import Decimal

_SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
    "P": Decimal(10**15), "E": Decimal(10**18),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity string, in base units (cores, bytes)."""
    text = str(text).strip()
    for width in (2, 1):
        suffix = text[-width:]
        if len(text) > width and suffix in _SUFFIXES and not suffix[-1:].isdigit():
            return Decimal(text[:-width]) * _SUFFIXES[suffix]
    return Decimal(text)


def milli(text: str) -> int:
    """A quantity in thousandths, rounded up (how the scheduler counts cpu)."""
    return int((parse_quantity(text) * 1000).to_integral_value(rounding="ROUND_CEILING"))
