# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
# Both create .venv/ on first use and install mnemo into it with pip, then reuse it.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch/torchvision first, pinned to the pair this machine carries on disk (see DESIGN.md)
	$(VENV)/bin/python -m pip install --quiet "torch==2.14.1" "torchvision==0.29.1"
	$(VENV)/bin/python -m pip install --quiet -e ".[test,ray]"
	@touch $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/mnemo demo

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q

clean:
	rm -rf $(VENV) mnemo-data
