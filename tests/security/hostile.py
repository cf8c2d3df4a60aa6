"""What a hostile caller sends: text for every parameter, values of the wrong type for every
field, and bodies that are not what a route reads. The sweeps send each of them everywhere,
and check with `unchanged_state` that nothing changed."""
import json

# Markup that must never come back unescaped.
MARKUP = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']
# Text for path segments, query values and string fields.
STRINGS = [
    "", " ", "\x00", "a\x00b", "\x1b[31m", "\u202e\u200b", "ünïcødé-名前-🚀",
    "' OR '1'='1", "1; DROP TABLE dashboard_podrecord; --", "\" OR \"\"=\"", "%", "_%_", "\\",
    "{{ 7*7 }}", "{% debug %}", "${7*7}", "#{7*7}", *MARKUP, "../../etc/passwd", "x" * 5000,
    "-1", "0", "1e309", "NaN", "-9223372036854775809", "9" * 400,
]
# Values of the wrong type, or out of any range, for JSON fields.
VALUES = [None, True, -1, 0, 2**64, -(2**63) - 1, 1e308, 1.5, [], {}, [[[]]], {"$gt": ""},
          "x" * 100_000, "\x00", "<script>alert(1)</script>"]

NESTING = 100_000


def bodies() -> list[tuple[str, bytes]]:
    """(what, raw bytes) of bodies that are not what any route reads."""
    return [
        ("empty", b""), ("brace", b"{"), ("unclosed list", b"[1, 2"), ("no value", b'{"a":}'),
        ("null", b"null"), ("list", b"[]"), ("string", b'"uid"'), ("number", b"1"),
        ("deep lists", b"[" * NESTING + b"]" * NESTING),
        ("deep objects", b'{"a":' * NESTING + b"1" + b"}" * NESTING),
        ("lone surrogate", b'{"uid": "\\ud800", "node": "\\udfff", "name": "\\ud800"}'),
        ("escaped NUL", b'{"uid": "a\\u0000b", "node": "\\u0000"}'),
        ("huge integer", b'{"uid": ' + b"9" * 5000 + b', "timeout": ' + b"9" * 5000 + b"}"),
        ("huge exponent", b'{"timeout": 1e999, "uid": -1e999}'),
        ("not UTF-8", b'{"uid": "\xff\xfe\xfd"}'),
        ("NaN", b'{"timeout": NaN, "uid": Infinity}'),
        ("duplicate keys", b'{"uid": "a", "uid": {"b": 1}}'),
        ("form", b"uid=a&node=b"),
        ("unknown fields", json.dumps({"unknown": {"deep": [1, 2, 3]}, "__proto__": {},
                                       "constructor": None}).encode()),
    ]


def field_bodies(fields: list[str]) -> list[tuple[str, bytes]]:
    """For a JSON body with `fields`: each field set to each wrong value and each hostile
    string, the others left as harmless text naming nothing that exists."""
    out = []
    for field in fields:
        for value in VALUES + STRINGS:
            body = {name: "sweep-nothing" for name in fields}
            body[field] = value
            out.append((f"{field}={str(value)[:20]!r}", json.dumps(body).encode()))
    return out


def unchanged_state():
    """What no hostile request may change: the read model's pods and nodes, the owner's
    cache (its counts, asked of it), the API tokens."""
    from dashboard.clients.owner_client import send
    from dashboard.models import ApiToken, NodeRecord, PodRecord
    status = send("status", timeout=5)
    return ({(p.uid, p.state, p.node) for p in PodRecord.objects.all()},
            {(n.name, str(n.requested)) for n in NodeRecord.objects.all()},
            {key: status[key] for key in ("pods", "assumed", "pending", "nodes")},
            sorted(ApiToken.objects.values_list("digest", flat=True)))
