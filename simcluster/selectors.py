"""labelSelector and fieldSelector query parameters, parsed once into match functions.

Lists, watches and deletecollection all filter with these, on the small
label/field index each stored object keeps (never on the full JSON).
"""

from schedcache.selector import matches, parse_selector
from simcluster.status import bad_request

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
    """A predicate over a labels dict, or None when the selector selects everything.
    The grammar is schedcache's (one parser in the project); a malformed one is a 400."""
    if not text:
        return None
    try:
        requirements = parse_selector(text)
    except ValueError:
        raise bad_request(f'unable to parse requirement: invalid label selector "{text}"') from None
    return lambda labels: matches(requirements, labels)


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
