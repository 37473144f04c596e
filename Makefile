# The two commands a newcomer needs: `make book` and `make test`. Both create .venv and install everything pinned.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book offline browser-test test student course grade lint clean robust records

# requirements.lock pins every package, torch==2.13.0 among them: the CPU build, never a multi-GB CUDA download.
$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade "pip==24.3.1"
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

# Every notebook executed afresh, two at a time (one thread each; the appendix, which times code, alone at the
# end), into the cache that the build then reads: an empty cache first, so a change in src/ never hides behind it.
# `make book EDITION=student`: the students' edition, worked solutions and solution code left out, made from the
# full build's executed notebooks (built first if missing) into _build/student-edition/html.
book: $(STAMP)
ifeq ($(EDITION),student)
	test -f _build/html/index.html || $(MAKE) book EDITION=
	ATTNLAB_PROGRESS=lines $(BIN)/python scripts/student_edition.py --cache _build/.jupyter_cache --out _build/student-edition
else ifeq ($(EDITION),)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/.jupyter_cache
	ATTNLAB_PROGRESS=lines ATTNLAB_STRICT=1 $(BIN)/python scripts/execute_book.py --cache _build/.jupyter_cache --workers 2 \
		--alone notebooks/appendix_attention_costs.ipynb -- notebooks/*.ipynb
	ATTNLAB_PROGRESS=lines $(BIN)/jupyter-book build . --all -W --keep-going
else
	@echo "EDITION is student, or unset for the full edition; got '$(EDITION)'" && exit 2
endif

# Every chapter in full under the robustness conditions (other seed offsets, torch's non-vectorised kernels, no
# thread setting), two at a time: the table of every recorded run goes to _build/robust/ and to the reproducing
# page. `make robust CHAPTERS="09 10"` runs a subset, `CONDITION="no thread setting"` one condition; both add to the
# runs recorded in _build/robust/ (a plain `make robust` starts afresh).
robust: $(STAMP)
	$(BIN)/python scripts/robust.py --out _build/robust --workers 2 --table book/robustness_table.md \
		$(if $(CONDITION),--condition "$(CONDITION)") $(if $(CHAPTERS)$(CONDITION),,--fresh) \
		$(if $(CHAPTERS),$(foreach c,$(CHAPTERS),notebooks/$(c)_*.ipynb),notebooks/[01]*_*.ipynb)

# The records the chapters conclude from, made again from nothing in _build/records/ (the weekly workflow
# records.yml; `make records RECORDS=pointer-networks` makes one): each command fails when its new record
# contradicts what its chapter states over seeds. The committed records in results/ are left as they are.
RECORDS ?= scoring-retrieval encoder-decoder bahdanau-attention luong-attention soft-vs-hard parameterized-attention \
	transformer-translation neural-turing-machines pointer-networks pointer-networks-tsp \
	rnnenc-plateau transformer-vs-rnn pointer-tsp lstm-copy-longer pointer-hull-longer \
	pointer-hull-wider pointer-hull-sizes
records: $(STAMP)
	mkdir -p _build/records
	for name in $(RECORDS); do \
		rm -f _build/records/$$name.json; \
		$(BIN)/python -m attnlab.experiments $$name --jobs 2 --json _build/records/$$name.json || exit 1; \
	done

# An offline copy: MathJax from the npm registry, served from _build/html/_static instead of a CDN (and from the
# students' edition's own _static, when that edition is built).
offline: $(STAMP)
	test -f _build/html/index.html || $(MAKE) book EDITION=
	npm install --silent --no-save --no-package-lock --prefix _build/offline mathjax@3.2.2
	$(BIN)/python scripts/offline_book.py _build/html _build/offline/node_modules/mathjax
	if [ -f _build/student-edition/html/index.html ]; then \
		$(BIN)/python scripts/offline_book.py _build/student-edition/html _build/offline/node_modules/mathjax; fi

# Every page of both built editions in headless Chromium (Debian's chromium package), and no solution in the
# students' edition.
browser-test: $(STAMP)
	ATTNLAB_REQUIRE_BOOK=1 $(BIN)/pytest tests/test_book_in_browser.py tests/test_explorables_in_book.py tests/test_links.py \
		tests/test_student_edition.py tests/test_page_weight.py -p no:cacheprovider

# Two pytest workers (pytest-xdist), each test file and each notebook on one of them, one thread each.
test: $(STAMP)
	ATTNLAB_QUICK=1 ATTNLAB_STRICT=1 OMP_NUM_THREADS=1 $(BIN)/pytest tests notebooks --nbval-lax --nbval-current-env -p no:cacheprovider \
		-n 2 --dist loadfile

student: $(STAMP)
	$(BIN)/python -m attnlab.homework student notebooks _build/student

# The nbgrader course folder (nbgrader_config.py and source/<chapter>/) for instructors; see book/instructors.md.
course: $(STAMP)
	$(BIN)/python -m attnlab.homework course notebooks _build/course

# nbgrader itself, only for grading: pinned in its own lock, installed on top of the course's environment.
GRADING_STAMP := $(VENV)/.grading-installed
$(GRADING_STAMP): $(STAMP) requirements-grading.lock
	$(BIN)/pip install --quiet -r requirements-grading.lock
	touch $(GRADING_STAMP)

# Every chapter graded end to end with the real nbgrader: release, the solution and wrong submissions of every
# chapter, the submissions that attack the grader in the chapters ATTACKS (one whose answers are functions, one
# whose student writes a model class), CSV export; then a class graded serially and with two workers
# (tests/test_class_grading.py) and the attacks on the grader, as root and as an ordinary user
# (tests/test_grading_attacks.py). The weekly workflow grading.yml runs every attack on every chapter:
# `make grade ATTACKS= ATTNLAB_ATTACK_MATRIX=full`.
ATTACKS ?= 01 07
grade: $(GRADING_STAMP)
	$(BIN)/python .ci/grade_homework.py $(if $(ATTACKS),--attacks $(ATTACKS))
	ATTNLAB_QUICK=1 ATTNLAB_REQUIRE_NBGRADER=1 $(BIN)/pytest tests/test_class_grading.py tests/test_grading_attacks.py \
		-p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests notebooks benchmarks scripts book/_ext .ci
	$(BIN)/ruff format --check src notebooks

clean:
	rm -rf _build
