"""The two screens every page is looked at on in the browser tests (a 390×844 phone and a
1280×800 laptop), a context that opens a page at one of them, and what is checked of
every page there."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import expect

from tests.support.axe import serious_violations

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
SIZES = {"390x844": PHONE, "1280x800": DESKTOP}


def open_page(browser, size: dict, js: bool = True):
    """A new context (its own cookies) at ``size`` and its page; the caller closes the context."""
    context = browser.new_context(java_script_enabled=js, **size)
    context.set_default_timeout(15_000)
    return context, context.new_page()


def no_horizontal_scroll(page) -> bool:
    """Nothing on the page is wider than the screen."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


class Look:
    """Looks at a page the way a person meets it, at one size: it fits the screen, a
    screenshot is kept in ``folder`` (NAME-SIZE.png), and axe-core's serious problems are
    collected (every page's, to report them all at once)."""

    def __init__(self, page, size: str, folder: Path) -> None:
        self.page, self.size, self.folder = page, size, folder
        self.problems: dict[str, list] = {}

    def __call__(self, name: str) -> None:
        assert no_horizontal_scroll(self.page), f"{name} scrolls sideways at {self.size}"
        self.page.screenshot(path=str(self.folder / f"{name}-{self.size}.png"), full_page=True)
        found = serious_violations(self.page)
        if found:
            self.problems[f"{name} at {self.size}"] = found


@contextmanager
def looking(browser, size: str, folder: Path, js: bool = True):
    """A page at ``size`` (a key of SIZES) in a new context, and the Look that looks at it
    there: yields (page, look), closes the context whatever happens, and once the steps
    have all passed, fails on the serious problems axe-core found on every page looked at."""
    context, page = open_page(browser, SIZES[size], js)
    look = Look(page, size, folder)
    try:
        yield page, look
    finally:
        context.close()
    assert not look.problems, look.problems


def fields(page, *labels: str) -> None:
    """Each of these labels names a visible field (a screen reader says the same)."""
    for label in labels:
        expect(page.get_by_label(label, exact=True)).to_be_visible()
