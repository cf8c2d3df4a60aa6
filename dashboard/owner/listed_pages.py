"""The comparer's lists as the decoder hands them over: marshalled pages, unpacked one page
at a time while they are read.

Why: at 600,000 pods a list of (uid, version, node, phase, namespace, name) tuples held
about 300 bytes a pod, in the decoder while it listed and in the owner while it compared,
every comparison; a page of marshal bytes holds the same in about 100, and reading it makes
the tuples of one page at a time (bench/row_drift_bench.py --memory, issue 26).
"""
import marshal
from dataclasses import dataclass
from itertools import islice



def pack(items: list) -> bytes:
    """One page of a list, as ListedPages holds it."""
    return marshal.dumps(items)


@dataclass(frozen=True, slots=True)
class ListedPages:
    """A list's objects (plain values) in marshalled pages; iterating reads them in order,
    each time anew."""
    pages: tuple = ()
    count: int = 0

    @classmethod
    def of(cls, items, page: int) -> "ListedPages":
        """`items` in pages of `page` (the decoder packs the pages it lists as they come)."""
        items, pages, count = iter(items), [], 0
        while chunk := list(islice(items, page)):
            pages.append(pack(chunk))
            count += len(chunk)
        return cls(tuple(pages), count)

    def __iter__(self):
        for page in self.pages:
            yield from marshal.loads(page)

    def __len__(self) -> int:
        return self.count

    def packed(self) -> tuple:
        """As the decoder's message carries it (marshal: plain values only)."""
        return self.pages, self.count
