# The two commands of the README:
#   make run    set up, then run the main job: a real PySpark job rescaled live on this machine
#   make test   set up, then run the whole test suite against a real control plane
PY ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: setup run test test-extended test-unit cluster-build crds clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY)"; exit 1; }
	[ -x $(VENV)/bin/python ] || $(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*; touch $@

# On a cold cache the images (mostly downloads and disk) build while Go compiles the control plane (mostly CPU);
# the real-node fixture finds them in the cache. coredns waits: its image needs the binary Go builds. Root only (the
# Debian-based images need it, as the real nodes do); an interrupted or failed Go build stops the images too.
IMAGES_BESIDE_GO := pause prometheus operator spark-runner storm-runner kafka
cluster-build: setup
	@if [ "$$(id -u)" != 0 ]; then exec scripts/test-cluster build; fi; \
	scripts/build-images --only $(IMAGES_BESIDE_GO) >/dev/null & images=$$!; \
	trap 'kill $$images 2>/dev/null; exit 130' INT TERM; \
	scripts/test-cluster build; built=$$?; \
	[ $$built -eq 0 ] || kill $$images 2>/dev/null; \
	wait $$images || [ $$built -ne 0 ] || echo "cluster-build: the images did not build here; the real-node fixture will build them" >&2; \
	exit $$built

run: setup
	$(VENV)/bin/elastream run examples/wordcount.yaml --report out/run

test: setup cluster-build
	$(VENV)/bin/python -m pytest -q -m "not extended"

test-extended: setup cluster-build
	$(VENV)/bin/python -m pytest -q -m extended

test-unit: setup
	$(VENV)/bin/python -m pytest -q -m "not cluster and not slow"

crds: setup
	$(VENV)/bin/elastream crds

clean:
	scripts/test-cluster down || true
	rm -rf $(VENV)
