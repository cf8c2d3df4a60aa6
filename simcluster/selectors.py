"""labelSelector and fieldSelector query parameters, parsed once into match functions.

Lists, watches and deletecollection all filter with these, on the small
label/field index each stored object keeps (never on the full JSON).
"""

import re

from simcluster.status import bad_request

_LABEL_REQ = re.compile(
    r"\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9._/-]+)\s*"
    r"(?:(?P<op>==|=|!=|\s+in\s+|\s+notin\s+)\s*(?P<val>\([^)]*\)|[A-Za-z0-9._-]*))?\s*$")


def _split_top(text: str) -> list:
    """Split on commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def parse_label_selector(text: str | None):
    """A predicate over a labels dict, or None when the selector selects everything."""
    if not text:
        return None
    tests = []
    for part in _split_top(text):
        m = _LABEL_REQ.match(part)
        if not m or (m["neg"] and m["op"]):
            raise bad_request(f'unable to parse requirement: invalid label selector "{text}"')
        key, op = m["key"], (m["op"] or "").strip()
        if m["neg"]:
            tests.append(lambda labels, k=key: k not in labels)
        elif not op:
            tests.append(lambda labels, k=key: k in labels)
        elif op in ("in", "notin"):
            values = frozenset(v.strip() for v in m["val"].strip("()").split(","))
            if op == "in":
                tests.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                tests.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif op == "!=":
            tests.append(lambda labels, k=key, v=m["val"]: labels.get(k) != v)
        else:
            tests.append(lambda labels, k=key, v=m["val"]: labels.get(k) == v)
    if len(tests) == 1:
        return tests[0]
    return lambda labels: all(t(labels) for t in tests)


def parse_field_selector(text: str | None, supported: tuple):
    """A predicate over an object's field index ({"spec.nodeName": ..., ...}) or None."""
    if not text:
        return None
    tests = []
    for part in _split_top(text):
        for op in ("!=", "==", "="):
            key, sep, value = part.partition(op)
            if sep:
                break
        else:
            raise bad_request(f'invalid selector: \'{text}\'; can\'t understand \'{part}\'')
        key = key.strip()
        if key not in supported:
            raise bad_request(f'"{key}" is not a known field selector: only "'
                              + '", "'.join(supported) + '"')
        if op == "!=":
            tests.append(lambda f, k=key, v=value: f.get(k, "") != v)
        else:
            tests.append(lambda f, k=key, v=value: f.get(k, "") == v)
    if len(tests) == 1:
        return tests[0]
    return lambda f: all(t(f) for t in tests)
