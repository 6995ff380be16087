"""A page of a list, and iteration over every page after it.

The API pages lists by number (``page``, ``pageSize``, newest first) and says how many
items and pages there are (``meta``). ``Page`` holds one page's items with that
``meta``; ``Page.auto_paging_iter()`` (and each resource's ``iterate``) walks this page
and every later one, asking for the next page only when the items in hand run out.

Pages are counted from the newest item, so an item created during a walk pushes older
ones one place down: the walk skips an item it has already yielded (by ``id``) instead of
yielding it twice. Items created after the walk began are not yielded (they sort before
the first page).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kassa_client.models.base import KassaObject

T = TypeVar("T", bound=KassaObject)


@dataclass(frozen=True)
class Page(Generic[T]):
    data: list[T]
    page: int
    page_size: int
    total: int
    pages: int
    _fetch: Callable[[int], Page[T]] = field(repr=False, compare=False)

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> T:
        return self.data[index]

    @property
    def has_more(self) -> bool:
        """Whether a later page exists."""
        return self.page < self.pages

    def next_page(self) -> Page[T] | None:
        """The next page (same filters and size), or None after the last."""
        return self._fetch(self.page + 1) if self.has_more else None

    def auto_paging_iter(self) -> Iterator[T]:
        """Every item of this page and of every later page, each once."""
        seen: set[str] = set()
        page: Page[T] | None = self
        while page is not None:
            for item in page.data:
                key = getattr(item, "id", None)
                if key is not None:
                    if key in seen:
                        continue
                    seen.add(key)
                yield item
            if not page.data:
                return
            page = page.next_page()
