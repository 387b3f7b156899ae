# One Python virtualenv for the oracle, the Python package's tests and the
# WASM backend, installed from pinned requirements. The stamp makes it
# rebuild when the requirements change.
PYTHON_BOOTSTRAP ?= python3
VENV_STAMP := $(VENV)/.installed

venv: $(VENV_STAMP)

$(VENV_STAMP): requirements-dev.txt
	rm -rf $(VENV)
	$(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@
