# Two entry points for a fresh machine: `make simulate` (the main job) and `make test`.
export NO_MKDOCS_2_WARNING := 1
PYTHON ?= python3
VENV   ?= .venv
# VENV_FLAGS=--system-site-packages lets the venv use a torch the machine has (a CUDA build).
VENV_FLAGS ?=
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install simulate test lint typecheck imports docs bench clean sglang-env vllm-env router-env

# setup.py compiles these (core/cache/compiled.py lists them): an edit needs a rebuild.
COMPILED := $(addprefix core/cache/,$(addsuffix .py,args tree eviction ownership slots pool host_tier radix_tree radix_cache))

$(STAMP): pyproject.toml setup.py core/cache/compiled.py $(COMPILED) core/cache/_page_kernel.c plugins_example/pyproject.toml plugins_example/classics/pyproject.toml plugins_example/learned/pyproject.toml plugins_example/hints/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[dev]" -e ./plugins_example -e ./plugins_example/classics -e ./plugins_example/learned -e ./plugins_example/hints
	touch $(STAMP)

install: $(STAMP)

# SGLang 0.5.23's own code for the integration tests (tests/helpers/sglang_env.py loads it): the
# wheel is downloaded (--no-deps) and unpacked, never pip-installed (its dependencies are
# GPU-sized); the few small packages its radix-cache import chain needs go to site/.
SGLANG_VERSION := 0.5.23
SGLANG_ENV     := build/sglang-env
SGLANG_STAMP   := $(SGLANG_ENV)/.built-$(SGLANG_VERSION)

$(SGLANG_STAMP): tests/sglang_env_requirements.txt | $(STAMP)
	rm -rf $(SGLANG_ENV)
	mkdir -p $(SGLANG_ENV)/wheel
	$(PIP) download --no-deps --no-input -q "sglang==$(SGLANG_VERSION)" -d $(SGLANG_ENV)/wheel
	$(PY) -m zipfile -e $(SGLANG_ENV)/wheel/sglang-$(SGLANG_VERSION)-*.whl $(SGLANG_ENV)/src
	$(PIP) install --no-deps --no-input -q --target $(SGLANG_ENV)/site -r tests/sglang_env_requirements.txt
	touch $@

sglang-env: $(SGLANG_STAMP)

# vLLM 0.33.0's own code for the integration tests (tests/helpers/vllm_env.py loads it): as for
# SGLang, the wheel is downloaded (--no-deps) and unpacked, never pip-installed; its CPU offload
# modules (kv_offload/cpu: the manager, the policy base and factory, the spec) need only the
# small packages listed in tests/vllm_env_requirements.txt beyond radix-evict's own venv.
VLLM_VERSION := 0.33.0
VLLM_ENV     := build/vllm-env
VLLM_STAMP   := $(VLLM_ENV)/.built-$(VLLM_VERSION)

$(VLLM_STAMP): tests/vllm_env_requirements.txt | $(STAMP)
	rm -rf $(VLLM_ENV)
	mkdir -p $(VLLM_ENV)/wheel
	$(PIP) download --no-deps --no-input -q "vllm==$(VLLM_VERSION)" -d $(VLLM_ENV)/wheel
	$(PY) -m zipfile -e $(VLLM_ENV)/wheel/vllm-$(VLLM_VERSION)-*.whl $(VLLM_ENV)/src
	$(PIP) install --no-deps --no-input -q --target $(VLLM_ENV)/site -r tests/vllm_env_requirements.txt
	touch $@

vllm-env: $(VLLM_STAMP)

# SGLang's router (sglang-router 0.3.2: a Rust router with a Python launcher, runs on CPU) for the
# router exactness test (tests/sim/fleet/test_router_exactness.py starts it on 127.0.0.1 over
# stand-in workers): installed whole into a venv of its own, never into radix-evict's.
ROUTER_VERSION := 0.3.2
ROUTER_ENV     := build/router-env
ROUTER_STAMP   := $(ROUTER_ENV)/.built-$(ROUTER_VERSION)

$(ROUTER_STAMP):
	rm -rf $(ROUTER_ENV)
	$(PYTHON) -m venv $(ROUTER_ENV)
	$(ROUTER_ENV)/bin/python -m pip install --no-input -q "sglang-router==$(ROUTER_VERSION)"
	touch $@

router-env: $(ROUTER_STAMP)

simulate: $(STAMP)
	$(VENV)/bin/radix-evict simulate

lint: $(STAMP)
	$(VENV)/bin/ruff check setup.py core builtin_policies cli plugins_example tests bench docs

# mypy and import-linter name a module after its folders, and the package radix_evict is
# core/ with builtin_policies/ and cli/ inside it: both check a tree of links with the
# installed shape (docs/gen/architecture.py builds it from pyproject's package-dir table),
# so imports between the folders resolve (checked as the files they are, they would be Any).
TYPECHECK_TREE := build/typecheck

typecheck: $(STAMP)
	$(PY) docs/gen/architecture.py tree $(TYPECHECK_TREE) >/dev/null
	MYPYPATH=$(TYPECHECK_TREE) $(VENV)/bin/mypy --cache-dir build/typecheck-cache -p radix_evict
	$(VENV)/bin/mypy --cache-dir build/typecheck-cache setup.py
	$(VENV)/bin/mypy --cache-dir build/typecheck-cache plugins_example/classics/src plugins_example/learned/src plugins_example/hints/src

# The architecture's contracts ([tool.importlinter] in pyproject.toml).
imports: $(STAMP)
	$(PY) docs/gen/architecture.py lint-imports

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir $(CURDIR)/build/site

test: lint typecheck imports docs sglang-env vllm-env router-env
	$(PY) -m pytest -q tests
	cd plugins_example && ../$(PY) -m pytest -q tests
	cd plugins_example/classics && ../../$(PY) -m pytest -q tests
	cd plugins_example/learned && ../../$(PY) -m pytest -q tests
	cd plugins_example/hints && ../../$(PY) -m pytest -q tests

bench: $(STAMP)
	$(PY) bench/bench_cache.py
	$(PY) bench/bench_engine.py

# The compiled cache modules sit beside their sources in an editable install (*.so, ignored by
# git): removed too, or a later pure-Python install would still import them.
clean:
	rm -rf $(VENV) build site .pytest_cache .mypy_cache .ruff_cache
	rm -f core/cache/*.so core/cache/*.pyd
