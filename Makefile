# The two commands a newcomer needs: `make book` and `make test`. Both create .venv and install everything pinned.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test student lint clean

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade "pip==24.3.1"
	# torch==2.13.0 is pinned in requirements.lock: the CPU build, never a multi-GB CUDA download.
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	ATTNLAB_PROGRESS=lines $(BIN)/jupyter-book build . --all -W --keep-going

test: $(STAMP)
	ATTNLAB_QUICK=1 $(BIN)/pytest tests notebooks --nbval-lax --nbval-current-env -p no:cacheprovider

student: $(STAMP)
	$(BIN)/python -m attnlab.homework notebooks _build/student

lint: $(STAMP)
	$(BIN)/ruff check src tests notebooks benchmarks

clean:
	rm -rf _build
