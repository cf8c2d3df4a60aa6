# `make run`: the whole dashboard on the embedded default; `make test`: the import rules and
# the whole suite; `make test-fast`: the part that starts no process, drives no browser and
# sweeps nothing (the inner loop), on two workers (with REDIS_URL, the second uses the next
# database number). Each creates .venv and installs requirements.txt first,
# again whenever it changes.

PYTHON ?= python3
VENV := .venv
INSTALLED := $(VENV)/.installed

.PHONY: run test test-fast

run: $(INSTALLED)
	$(VENV)/bin/python manage.py up

# Three pytest runs: what starts no process of the stack on two workers (each its own
# databases); the live tests one at a time (each runs a whole stack, which wants both
# cores); the browser tests in a pytest of their own (after Playwright has run in a
# process, pytest-asyncio tests there fail; they need Debian's chromium, .ci/run installs it).
# Each prints its 15 slowest steps, so that a CI log says where the time went.
test: $(INSTALLED)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest --ignore=tests/browser -m "not live" -n 2 --durations=15
	$(VENV)/bin/python -m pytest --ignore=tests/browser -m live --durations=15
	$(VENV)/bin/python -m pytest tests/browser --durations=15

test-fast: $(INSTALLED)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest --ignore=tests/browser -m "not live and not slow" -n 2

$(INSTALLED): requirements.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check -r requirements.txt
	touch $@
