"""The `labels` filter that prints a pod's labels and node selector: chips in the
mapping's order, escaped, "none" for an empty or missing mapping."""
import pytest

from dashboard.templatetags.labels import labels


@pytest.mark.parametrize("mapping, printed", [
    (None, '<span class="muted">none</span>'),
    ({}, '<span class="muted">none</span>'),
    ({"app": "web"}, '<code class="label">app=web</code>'),
    ({"b": "2", "a": "1"}, '<code class="label">b=2</code> <code class="label">a=1</code>'),
    ({"x.io/<b>": "\"'&"},
     '<code class="label">x.io/&lt;b&gt;=&quot;&#x27;&amp;</code>'),
])
def test_labels_print_as_escaped_chips_in_order(mapping, printed):
    assert labels(mapping) == printed


def test_ten_thousand_labels_print_every_one():
    printed = labels({f"label-{i}": f"v{i}" for i in range(10_000)})
    assert printed.count('<code class="label">') == 10_000
    assert printed.endswith('<code class="label">label-9999=v9999</code>')
