"""What the browser tests share besides fixtures."""
import os
from pathlib import Path

TIMEOUT_MS = 30_000  # how long any expectation waits for the page to get there
# Kept after the run as CI artifacts; printed in the terminal summary.
SCREENSHOTS = Path(os.environ.get("SCHEDVIEW_SCREENSHOTS",
                                  Path(__file__).resolve().parents[2] / "var" / "screenshots"))


def log_in(page, username, password):
    """Fill and send the login form the page shows, as a person would."""
    page.fill("form.login input[name=username]", username)
    page.fill("form.login input[name=password]", password)
    page.click("form.login button[type=submit]")


# Installed in every page before its scripts run: notes when htmx's ws extension opened
# the page's live socket (the server has then joined it to the owner's events).
NOTE_LIVE_SOCKET = 'document.addEventListener("htmx:wsOpen", () => { window.__live = true; });'


def wait_live(page):
    """Wait until the page's live socket is open: changes from then on reach it."""
    page.wait_for_function("() => window.__live === true")   # a function: a bare expression would be eval'd, which the CSP refuses


def is_csp_violation(console_text: str) -> bool:
    """Chromium's console message when the Content-Security-Policy refused something."""
    return "Content Security Policy" in console_text
