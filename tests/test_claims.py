"""The claims tables of all 19 papers, tested with synthetic measurements (one generic test, no paper-specific code).

For every graded claim, every comparison its rule and conditions make is placed with `trustlib.results.synthetic_metrics`
clearly beyond its reproduced threshold, at it, across it, against the claim, as NaN or from a single seed, one at a
time and all together, and the one grader must answer as the semantics in `trustlib.results` say: all clear is
reproduced; a significant effect against the claim is never reproduced or partially; a failed condition is
inconclusive; nothing measured, one seed only, or every interval across its threshold is inconclusive. Besides,
every claims table is valid, pre-registered (no rule changed after publication without a dated change-log entry),
and no paper module grades a claim itself."""
import importlib, re
from pathlib import Path
import pytest
from trustlib.config import PAPERS
from trustlib.results import (Claim, Compare, Diff, Each, check_claims, check_preregistration, grade, load_ledger, synthetic_metrics,
                              claims_hash)

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTED = [p for p in PAPERS if (ROOT / "nbs" / p.notebook).exists()]
# a paper is converted once its module declares CLAIMS (the old `judge` form is gone when all 19 are)
CONVERTED = [p for p in IMPLEMENTED if hasattr(importlib.import_module(p.module), "CLAIMS")]

def test_every_paper_declares_its_claims_as_data():
    "All 19 papers declare CLAIMS (graded by the one grader); none is left on the old per-paper `judge` form."
    assert len(IMPLEMENTED) == 19 and [p.name for p in IMPLEMENTED if p not in CONVERTED] == []

def _claims(paper):
    return check_claims(importlib.import_module(paper.module).CLAIMS)

def _verdict(claim, tests, where):
    "The verdict of `claim` (graded as an ordinary claim: a graded illustration's 'illustrated' is its 'reproduced') on synthetic metrics."
    m = synthetic_metrics(tests, where)
    return None if m is None else grade([Claim(claim.id, claim.claim, claim.paper, claim.rule, claim.requires, headline=True)], m)[0]

def _cases():
    for p in CONVERTED:
        for c in _claims(p):
            if c.rule is not None: yield pytest.param(p, c, id=f"{p.name}:{c.id}")   # graded claims and graded illustrations

@pytest.mark.parametrize("paper", CONVERTED, ids=lambda p: p.name)
def test_claims_table_is_valid(paper):
    claims = _claims(paper)
    assert len(claims_hash(claims)) == 12
    for c in claims:
        assert c.claim.strip() and c.paper.strip(), c.id
        if c.status != "graded": assert c.reason.strip(), f"{c.id}: an ungraded claim or an illustration says why"

@pytest.mark.parametrize("paper,claim", list(_cases()))
def test_every_claim_under_synthetic_measurements(paper, claim):
    rule_leaves = [l for l in claim.rule.leaves()]
    tests = [claim.rule, *claim.requires]
    n_rule = len(synthetic_metrics_leaves(claim.rule))
    n_all = sum(len(synthetic_metrics_leaves(t)) for t in tests)
    # all comparisons clearly beyond their reproduced thresholds: reproduced
    v = _verdict(claim, tests, "clear")
    if v is None: pytest.skip(f"{claim.id}: its comparisons share keys that cannot be placed independently")
    assert v.verdict == "reproduced", (v.verdict, v.reason)
    # nothing measured, one seed, every interval across its threshold: inconclusive
    for pos in ("nan", "single", "straddle"):
        v = _verdict(claim, tests, pos)
        if v is not None: assert v.verdict == "inconclusive", (pos, v.verdict, v.reason)
    # every comparison of the rule at its threshold (strict comparisons do not clear it): not reproduced
    if all(l.op in ('>', '<') for l in rule_leaves):
        v = _verdict(claim, tests, {i: "at" for i in range(n_rule)})
        if v is not None: assert v.verdict != "reproduced", v.reason
    for i in range(n_all):
        in_rule = i < n_rule
        # a significant effect against the claim, in any one comparison: never reproduced or partially
        v = _verdict(claim, tests, {i: "opposite"})
        if v is not None: assert v.verdict in ("not_reproduced", "inconclusive"), (i, v.verdict, v.reason)
        if v is not None and in_rule: assert v.verdict == "not_reproduced", (i, v.verdict, v.reason)
        if v is not None and not in_rule: assert v.verdict == "inconclusive" and v.condition_met is False, (i, v.reason)
        # one comparison across its threshold: never reproduced through a condition; the rule's answer otherwise
        v = _verdict(claim, tests, {i: "straddle"})
        if v is not None and not in_rule: assert v.verdict == "inconclusive" and "condition not met" in v.reason, (i, v.reason)
        # one comparison as NaN or from one seed: never a verdict stronger than with it clear
        for pos in ("nan", "single"):
            v = _verdict(claim, tests, {i: pos})
            if v is not None: assert v.verdict in ("reproduced", "partially", "inconclusive") if in_rule else v.verdict == "inconclusive", (i, pos, v.reason)
    # the rule's text names every quantity it reads
    text = claim.rule_text() + " " + claim.condition_text()
    for l in synthetic_metrics_leaves(claim.rule) + [l for t in claim.requires for l in synthetic_metrics_leaves(t)]:
        named = l.name() in text or l.name().split(" [")[0] in text
        pair = isinstance(l.of, Diff) and l.of.a in text and l.of.b in text   # BestAmong names the favoured and each other method
        assert named or pair or all(k in text for k in l.keys()), (l.name(), text)

def synthetic_metrics_leaves(test):
    "The comparisons `synthetic_metrics` places for `test` (an Each pattern counts twice), in its order."
    out = []
    for l in test.leaves():
        out += [l, l] if isinstance(l.of, str) and '*' in l.of else [l]
    return out

@pytest.mark.parametrize("paper", CONVERTED, ids=lambda p: p.name)
def test_preregistered(paper):
    assert check_preregistration(_claims(paper), load_ledger(paper.name, ROOT)) == []

@pytest.mark.parametrize("paper", CONVERTED, ids=lambda p: p.name)
def test_no_paper_grades_itself(paper):
    """The paper module declares CLAIMS and computes measurements; it never builds a verdict, a rule's outcome or an
    interval test of its own (no judge, Rule, settle/side, verdict words as results)."""
    src = (ROOT / (paper.module.replace('.', '/') + '.py')).read_text()
    for pat in (r"\bjudge\(", r"\bRule\(", r"\bsettle\(", r"\bside\(", r"\bverdict_flags\(", r"\bVerdict\(", r"\.grade\(", r"\bgrade\(",
                r"_lo\s*[<>]=?", r"\.lo\s*[<>]=?", r"\.hi\s*[<>]=?"):
        hits = [l.strip() for l in src.splitlines() if re.search(pat, l) and not l.lstrip().startswith('#')]
        assert not hits, f"{paper.module}: {pat!r} in {hits[:3]}"
