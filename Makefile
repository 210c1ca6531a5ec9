# The two commands of the README's quick start. Each sets up what it needs on first use
# (a virtual environment in .venv with the project and its test tools), so a fresh
# machine with Python 3.10+ needs nothing else.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: autotune test check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The main job: autotune the example kernels on the default backend (CuPy kernels on a
# CUDA GPU, their NumPy counterparts elsewhere), gate them against the committed caches,
# and write the HTML report.
autotune: $(STAMP)
	$(BIN)/python -m pytest example_kernels --autotune --autotune-html=autotune-report.html

# The test suite; CI runs exactly this.
test: $(STAMP)
	$(BIN)/python -m pytest

# Lint, strict types and the workflows against GitHub's schema; CI runs this beside `test`.
check: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy
	$(BIN)/python -m check_jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

clean:
	rm -rf $(VENV) build *.egg-info
