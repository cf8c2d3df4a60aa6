# `make run`: the whole dashboard on the embedded default; `make test`: the whole suite.
# Both create .venv and install requirements.txt first, again whenever it changes.

PYTHON ?= python3
VENV := .venv
INSTALLED := $(VENV)/.installed

.PHONY: run test

run: $(INSTALLED)
	$(VENV)/bin/python manage.py up

test: $(INSTALLED)
	$(VENV)/bin/python -m pytest

$(INSTALLED): requirements.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check -r requirements.txt
	touch $@
