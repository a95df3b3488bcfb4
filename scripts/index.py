# %% [markdown]
# # trustlib
#
# > Literate, CPU-scale reproductions of 19 ICML 2025 papers on trustworthy machine learning.

# %% [markdown]
# <!-- trustlib:results -->
# The results — each paper's headline verdict, the totals and every claim — are on the website:
# [papers](https://trustlib.github.io/trustlib/results/papers.html) ·
# [results dashboard](https://trustlib.github.io/trustlib/results/dashboard.html).

# %% [markdown]
# trustlib re-implements the methods of 19 ICML 2025 papers on trustworthy machine learning (unlearning, fairness,
# privacy, calibration, robustness, interpretability, evaluation, theory), re-runs each paper's experiment at a
# scale that fits a laptop CPU, and grades every claim of the paper — *reproduced*, *partially*, *not reproduced*,
# *inconclusive* (the data cannot tell at this scale), *illustrated* (a phenomenon shown, no threshold to test) or
# *not testable offline* — by a rule written down before the numbers existed. Each paper's page explains the method
# in prose and math, shows the experiment, and ends with the paper's numbers beside ours and an audit trail of
# every verdict.

# %% [markdown]
# ## Use and contribute
#
# Run one paper with `trustlib run PAPER --profile cpu`, the whole project with `make reproduce`, the tests with
# `make test`; the library installs as `trustlib-icml25`. [Use and contribute](use.ipynb) is the guide: commands,
# profiles, installing, the library, data, the layout of the repository and how to write a notebook.

# %% [markdown]
# ## Cite trustlib
#
# ```bibtex
# @software{trustlib2026,
#   title = {trustlib: literate, CPU-scale reproductions of 19 ICML 2025 papers on trustworthy machine learning},
#   author = {{trustlib developers}},
#   year = {2026},
#   url = {https://github.com/trustlib/trustlib},
#   note = {Website: https://trustlib.github.io/trustlib/}
# }
# ```
#
# Each paper's page has the paper's own BibTeX entry.
