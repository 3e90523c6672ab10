# The study's batch. `make evaluate` runs every experiment notebook with papermill for one
# profile (embedded unless PROFILE= says otherwise), then builds the book.
#
#   make setup                       .venv from requirements-lock.txt and a `specdec` kernel
#   make lock                        recompile requirements-lock.txt from requirements.txt
#   make download                    hub weights + the full WikiText-2 where the hub is reachable;
#                                    always builds the embedded model's local cache
#   make evaluate [PROFILE=embedded] [RESULTS_DIR=results] [FORCE=0|1] [BOOK=1|0]
#   make book [PROFILE=...]          the Jupyter Book from the result files (runs no experiment)
#   make test | make lint | make notebooks (regenerate notebooks/*.ipynb)
#   make faults [FAULTS=50 SEED=0]   tests/faults.py: seeded faults (kills, damaged files, a full
#                                    disk, W&B unreachable) in smoke batches, each rerun checked
#                                    against an uninterrupted run (slow: minutes)
#   make mutation                    tests/mutation.py over the core and the verdicts' modules:
#                                    the score and every surviving mutant (slow: minutes per module)
#   make gpu-check                   smoke-pair on CUDA: token identity, timing sync, memory;
#                                    report in $(RESULTS_DIR)/gpu-check/report.json (skips
#                                    with one line where no CUDA device is visible)
#   make colab-pip-check             the Colab setup cell's pip install, run for real in a venv
#                                    seeded with Colab's published versions (network, minutes;
#                                    tests/colab_seeded.py; not in `make test`)

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.specdec-setup
KERNEL := specdec

PROFILE ?= embedded
RESULTS_DIR ?= results
# a folder name with a space would split into two words in every recipe below
ifneq ($(words $(RESULTS_DIR)),1)
$(error RESULTS_DIR '$(RESULTS_DIR)' must be one folder name without spaces)
endif
FORCE ?= 0
# BOOK=0: evaluate runs the notebooks only (CI's smoke-pair batch)
BOOK ?= 1
# FORCE is read as runner/session.py's parse_flag reads it (any case): anything else is refused
# in one line before any target runs (`make evaluate FORCE=maybe` must not quietly mean 0)
FORCE_LC := $(shell printf '%s' '$(subst ','',$(FORCE))' | tr A-Z a-z)
FORCE_BAD := $(or $(filter-out 1 true yes on 0 false no off,$(FORCE_LC)),$(filter-out 0 1,$(words $(FORCE))))
ifneq ($(FORCE_BAD),)
$(error FORCE must be true or false (1/0, yes/no), got '$(FORCE)')
endif
FORCE_PY := $(if $(filter 1 true yes on,$(FORCE_LC)),True,False)
# the committed embedded results must be complete: no placeholder pages
BOOK_FLAGS ?= $(if $(filter embedded,$(PROFILE)),--strict,)

# W&B: offline (local files) unless WANDB_API_KEY is set (specdec_study/environment/tracking.py decides; make
# passes WANDB_MODE through untouched); WANDB_MODE=disabled turns it off.
export TOKENIZERS_PARALLELISM ?= false
# progress bars (in the executed notebooks too): one update every 10 s at most
export TQDM_MININTERVAL ?= 10
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH),)

# the one list of notebooks (specdec_study/results/catalog.py), read when a batch starts by the
# environment's python (the declarations it imports need numpy and scipy, installed by setup)
NOTEBOOKS = $(shell PYTHONPATH=$(CURDIR) $(PY) -m specdec_study.results.catalog)
OUT_NB := $(RESULTS_DIR)/$(PROFILE)/notebooks

.PHONY: setup download evaluate _evaluate-locked book test lint notebooks clean-smoke gpu-check \
  mutation faults lock colab-pip-check

setup: $(STAMP)

# requirements.txt: the direct requirements; requirements-lock.txt: every package at the version
# the tests ran with (transitive ones included), then checked (pip check); `make lock` recompiles
# it from requirements.txt in a fresh venv. Not --no-deps: where no local CPU wheel of torch
# exists, PyPI's torch brings its CUDA libraries, which the lock (made with the CPU build) lacks.
$(STAMP): requirements.txt requirements-lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-lock.txt
	$(PY) -m pip check
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (specdec)"
	touch $@

download: setup
	$(PY) -m specdec_study.study download

# One batch per results folder: a second `make evaluate` for the same RESULTS_DIR/PROFILE is
# refused in one line while the first runs (specdec_study/environment/batch.py holds the lock). The
# profile is checked first: a bad one is one line, before any folder or notebook exists.
evaluate: setup
	@$(PY) -m specdec_study.environment.profiles $(PROFILE)
	@mkdir -p $(OUT_NB)
	@$(PY) -m specdec_study.environment.batch $(RESULTS_DIR)/$(PROFILE) -- \
	  $(MAKE) --no-print-directory _evaluate-locked

# each executed notebook is scrubbed (specdec_study/environment/scrub.py) before it may be committed:
# no progress bars, no warnings, no local absolute paths in its outputs. Unless forced, a notebook
# whose every result would be reused and whose executed copy shows them is kept as it is, not
# executed again (specdec_study/runner/keep.py): a batch on unchanged inputs rewrites no file.
_evaluate-locked:
	@start=$$(date +%s); \
	export SPECDEC_BATCH="$${SPECDEC_BATCH:-$(PROFILE)-$$(date -u +%Y%m%dT%H%M%SZ)}"; \
	echo "== batch $$SPECDEC_BATCH (the W&B group of its runs)"; \
	for nb in $(NOTEBOOKS); do \
	  echo "== $$nb ($(PROFILE))"; \
	  if [ "$(FORCE_PY)" = False ] && $(PY) -m specdec_study.runner.keep $$nb $(OUT_NB)/$$nb.ipynb \
	    --profile $(PROFILE) --results-dir $(RESULTS_DIR); then continue; fi; \
	  $(VENV)/bin/papermill notebooks/$$nb.ipynb $(OUT_NB)/$$nb.ipynb -k $(KERNEL) --cwd . \
	    -p profile $(PROFILE) -p results_dir $(RESULTS_DIR) -p force $(FORCE_PY) \
	    --log-output --no-progress-bar || exit 1; \
	  $(PY) -m specdec_study.environment.scrub $(OUT_NB)/$$nb.ipynb || exit 1; \
	done; \
	echo "== notebooks done in $$(( $$(date +%s) - start )) s"
	$(if $(filter 1,$(BOOK)),$(MAKE) --no-print-directory book,@echo "== book skipped (BOOK=$(BOOK))")

book: setup
	$(PY) book/build.py --profile $(PROFILE) --results $(RESULTS_DIR) $(BOOK_FLAGS)

test: setup
	$(PY) -m pytest -q

# Each module against the fast tests that cover it (not the statistical or real-model ones);
# --noconftest where the tests need no fixture (no torch import: seconds a mutant, not tens).
# Each mutant runs only the tests that reached its line; a survivor not explained in
# tests/mutation_survivors.md fails the target (make -k mutation runs every module anyway).
MUTATE := $(PY) tests/mutation.py
MUTATION_STATS_TESTS ?= tests/test_stats_by_hand.py tests/test_metrics.py tests/test_labels.py \
  tests/test_changes.py -x -q --noconftest
MUTATION_VERIFY_TESTS ?= tests/test_verify.py -x -q -m "not slow"
MUTATION_DECODE_TESTS ?= tests/test_decode.py -x -q -m "not slow" \
  -k "not rollback_across_sliding_window and not float32 and not vocab and not self_"
mutation: setup
	$(MUTATE) specdec_study/analysis/rules.py -- tests/test_rules.py tests/test_classify.py \
	  -x -q --noconftest
	$(MUTATE) specdec_study/analysis/changes.py -- tests/test_changes.py -x -q --noconftest
	$(MUTATE) specdec_study/analysis/stats.py -- $(MUTATION_STATS_TESTS)
	$(MUTATE) specdec_lib/core/verify.py -- $(MUTATION_VERIFY_TESTS)
	$(MUTATE) specdec_lib/core/decode.py -- $(MUTATION_DECODE_TESTS)

# 50 faults: 20 kills (10 SIGKILL, 10 SIGTERM) at random points of experiments and their publish,
# 10 damaged result files, 10 full disks, 10 runs without a W&B server; CI runs a 4-fault sample
FAULTS ?= 50
SEED ?= 0
faults: setup
	$(PY) tests/faults.py --faults $(FAULTS) --seed $(SEED)

lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

LOCK_VENV ?= /tmp/specdec-lock-venv
lock:
	rm -rf $(LOCK_VENV) && $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install -q -r requirements.txt
	{ sed -n '1,/^$$/p' requirements-lock.txt; $(LOCK_VENV)/bin/pip freeze --exclude-editable \
	  | sed 's/^torch==\([^+]*\)+cpu$$/torch==\1/'; } > requirements-lock.txt.new
	mv requirements-lock.txt.new requirements-lock.txt
	rm -rf $(LOCK_VENV)

notebooks: setup
	$(PY) notebooks/make_notebooks.py

COLAB_SEEDED ?= /tmp/specdec-colab-seeded
colab-pip-check: setup
	rm -rf $(COLAB_SEEDED) && $(PY) tests/colab_seeded.py $(COLAB_SEEDED)

gpu-check: setup
	WANDB_MODE=disabled timeout 300 $(PY) -m specdec_study.runner.gpu_check \
	  --out $(RESULTS_DIR)/gpu-check/report.json
