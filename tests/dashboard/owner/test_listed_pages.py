"""The comparer's lists in marshalled pages (dashboard/owner/listed_pages.py): read in
order, anew each time, a page at a time; carried in the decoder's message as plain values."""
import marshal

import pytest

from dashboard.owner.listed_pages import ListedPages


@pytest.mark.parametrize("count, page, pages", [
    (0, 3, 0),        # a list of nothing
    (1, 3, 1),
    (3, 3, 1),        # exactly one page
    (7, 3, 3),        # the last page short
])
def test_pages_hold_the_items_in_order(count, page, pages):
    items = [(f"uid-{i}", str(i), "node", "Running", "ns", f"pod-{i}") for i in range(count)]
    listed = ListedPages.of(iter(items), page=page)
    assert (len(listed), len(listed.pages)) == (count, pages)
    assert list(listed) == items
    assert list(listed) == items          # each reading starts anew


def test_a_page_is_unpacked_only_when_reached():
    listed = ListedPages((marshal.dumps([1, 2]), b"not marshal"), 3)
    read = iter(listed)
    assert [next(read), next(read)] == [1, 2]
    with pytest.raises((ValueError, EOFError, TypeError)):
        next(read)


def test_packed_is_what_the_decoders_message_carries():
    listed = ListedPages.of([{"metadata": {"name": "n1"}}], page=500)
    carried = marshal.loads(marshal.dumps(listed.packed()))
    assert ListedPages(*carried) == listed
