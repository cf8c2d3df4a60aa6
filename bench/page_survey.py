"""Every page of a running dashboard as a person sees it: websockets opened, console
errors and the widest overflow, per page, in headless Chromium at a laptop's width.

    .venv/bin/python bench/page_survey.py --url http://127.0.0.1:8000 \
        --user operator --password "$(cat var/operator-password)" [--seconds 30] [--width 1366]

Run it against `manage.py up` (or any deployment). For each page it opens a fresh tab,
stays `--seconds`, and prints: the websockets the page opened (a live page opens two:
the header's and its own; more means it reconnects), the console's errors and warnings,
and whether anything overflows the window sideways. Figures are printed, nothing is
asserted (tests/browser/ guards them).
"""
import argparse
import os
import re
import sys
import time

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("SCHEDVIEW_CHROMIUM", "/usr/bin/chromium")
PAGES = ("/", "/nodes/", "/heatmap/", "/zones/", "/pods/", "/snapshot/", "/events/",
         "/pools/", "/statuses/")


def detail_pages(page, base: str) -> list[str]:
    """The first pod's, node's and status's pages the lists link to."""
    found = []
    for listing, pattern in (("/pods/", r"^/pods/[^/?]+/$"), ("/nodes/", r"^/nodes/[^/?]+/$"),
                             ("/statuses/", r"^/statuses/[^/?]+/[^/?]+/$")):
        page.goto(base + listing)
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        found += [h for h in hrefs if re.match(pattern, h or "")][:1]
    return found


def survey(browser, base, user, password, seconds, width) -> None:
    context = browser.new_context(base_url=base, viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(base + "/accounts/login/")
    page.fill("form.login input[name=username]", user)
    page.fill("form.login input[name=password]", password)
    started = time.monotonic()
    page.click("form.login button[type=submit]")
    page.wait_for_url(base + "/")
    print(f"# {user} at {width} px; login took {time.monotonic() - started:.2f} s")
    print(f"{'page':40} {'sockets':>7} {'console':>7} overflow")
    for path in (*PAGES, *detail_pages(page, base)):
        tab = context.new_page()
        sockets, console = [], []
        tab.on("websocket", lambda ws: sockets.append(ws.url))
        tab.on("console", lambda m: console.append(f"{m.type}: {m.text}")
               if m.type in ("error", "warning") else None)
        tab.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        tab.goto(base + path)
        tab.wait_for_timeout(seconds * 1000)
        overflow = tab.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        print(f"{path[:40]:40} {len(sockets):7} {len(console):7} {overflow} px")
        for line in sorted(set(console))[:5]:
            print(f"    {line[:160]}")
        tab.close()
    context.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", action="append", required=True)
    parser.add_argument("--password", action="append", required=True)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--width", type=int, default=1366)
    args = parser.parse_args()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        for user, password in zip(args.user, args.password):
            survey(browser, args.url.rstrip("/"), user, password, args.seconds, args.width)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
