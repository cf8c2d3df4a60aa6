"""Logins through the login form of a running dashboard: each one's time and status.

    .venv/bin/python bench/login_bench.py URL USER PASSWORD LOGINS THREADS
    e.g. bench/login_bench.py http://127.0.0.1:8000 operator "$(cat var/operator-password)" 10 4

Each thread logs in LOGINS times, a fresh session each time (the form, then its POST with
the CSRF token; a 302 is a login). Run it against `manage.py up` while the demo churns:
the embedded SQLite then has the owner's batches to share its lock with. Figures are
printed (statuses counted: a 503 is "database is locked"), nothing is asserted.
"""
import http.cookiejar
import re
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request

base, user, password, n, threads = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                    int(sys.argv[5]))
times, codes = [], {}
lock = threading.Lock()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def one():
    """One login: the form, then its POST; its time and status recorded."""
    jar = http.cookiejar.CookieJar()
    form = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    html = form.open(base + "/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    data = urllib.parse.urlencode({"username": user, "password": password,
                                   "csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(base + "/accounts/login/", data=data,
                                     headers={"Referer": base + "/accounts/login/"})
    post = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    start = time.monotonic()
    try:
        code = post.open(request).status
    except urllib.error.HTTPError as error:
        code = error.code
    took = time.monotonic() - start
    with lock:
        times.append(took)
        codes[code] = codes.get(code, 0) + 1


def worker():
    for _ in range(n):
        one()


workers = [threading.Thread(target=worker) for _ in range(threads)]
for thread in workers:
    thread.start()
for thread in workers:
    thread.join()
times.sort()
print(f"{len(times)} logins in {threads} threads: statuses {codes}; "
      f"p50 {statistics.median(times):.2f} s, p90 {times[int(len(times) * 0.9) - 1]:.2f} s, "
      f"max {times[-1]:.2f} s")
