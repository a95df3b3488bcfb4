"""Parity of trustlib's SNS-Bench scorers with the official evaluator code.

    python tools/sns_bench_parity.py --official PATH [--data DIR] [--seed 0] [--write]

PATH is a checkout of HC-Guo/SNS-Bench (the folder that holds `opencompass/opencompass/datasets/sns_bench`). The
official evaluators are imported from there as they are, with small stand-ins for the OpenCompass registry, the
Hugging Face `datasets` and ModelScope imports they do not use for scoring, and for the sentence embedder of QueryGen
(both sides get the same embedding, so only the scoring logic is compared). OpenCompass's AccEvaluator and EMEvaluator
are applied as OpenCompass defines them: accuracy of the post-processed answer against the gold string, and exact
match after `general_postprocess` (loaded from the checkout's `opencompass/utils/text_postprocessors.py`).

Two answer sets are scored by both implementations:
- `handmade`: answers written here (emoji, CJK text, malformed lists, ...), no benchmark data needed;
- `perturbed`: every gold answer of the 12 subsets, perturbed at random (`perturb`, seeded): kept, reformatted, cut,
  extended, swapped with another item's, made unparseable. Needs the licensed data (`--data`, or
  $TRUSTLIB_SNS_BENCH).

It prints one line per subset, official vs ours, and with `--write` stores the official numbers (never the answers
of the benchmark) in tests/fixtures/sns_bench_parity.json, which `tests/test_sns_bench.py` checks ours against.
"""
import argparse, contextlib, importlib.util, io, json, os, sys, types
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sns_bench_parity.json"
sys.path.insert(0, str(ROOT))

# ---------------------------------------------------------------- answers
def _lst(xs): return repr(list(xs))

def _closed(rng, gold, others):
    k = rng.integers(6)
    if k == 0: return gold
    if k == 1: return "Answer: " + gold
    if k == 2: return gold + ".\nBecause the note says so."
    if k == 3: return str(rng.choice(others)) if others else "none"
    if k == 4: return gold.lower()
    return "I am not sure."

def perturb(name:str, rec:dict, rng, pool:list) -> str:
    "One perturbed answer to `rec` of subset `name`; `pool` holds other items' gold answers of the subset."
    from trustlib.evals.sns_bench import parse_fields, format_answer
    a = rec["answer"]; other = pool[int(rng.integers(len(pool)))]
    if name in ("Note-Taxonomy-single", "Note-Hashtag-single"):
        return _closed(rng, a, parse_fields(name, rec)["cands"])
    if name in ("Note-QueryCorr-explain", "Note-Gender"):
        return _closed(rng, a, ["Yes", "No"])
    if name == "Note-QueryCorr-topic":
        return [a, str(rng.choice(["-1", "0", "1", "2", "3"])), f"Rating: {a}", f"level {a} because it matches", "no idea"][rng.integers(5)]
    if name == "Note-Taxonomy-multiple":
        lv = a.split(" | "); cands = parse_fields(name, rec)["cands"]
        k = rng.integers(5)
        if k == 1 and cands and cands[1]: lv[1] = str(rng.choice(cands[1]))
        if k == 2: return "The " + " | ".join(lv) + "."
        if k == 3: return " | ".join(lv[::-1])
        if k == 4: return " | ".join(lv) + "\nexplanation"
        return " | ".join(lv)
    if name in ("Note-Hashtag-multiple", "Note-NER"):
        items = [t.strip() for t in a.split(",") if t.strip()]
        k = rng.integers(7)
        if k == 1 and len(items) > 1: items = items[:-1]
        if k == 2: items = items + [t.strip() for t in other.split(",")[:1]]
        if k == 3: items = items[::-1]
        s = ", ".join(items)
        return {4: "Answer: " + s, 5: s + "\nThese are all.", 6: ""}.get(int(k), s)
    if name == "Note-MRC-simple":
        k = rng.integers(7)
        if k == 0 or not a: return _lst(a) if k != 6 else "[]"
        if k == 1: return "[]"
        if k == 2: return _lst([p[:max(1, len(p) // 2)] for p in a])
        if k == 3: return _lst([a[0] + " 😊👍"] + a[1:])
        if k == 4: return _lst(other) if other else _lst(a)
        if k == 5: return "The answer is: " + " ".join(a)
        return _lst(["\n".join(a)])
    if name == "Note-MRC-complex":
        import re
        from trustlib.evals.sns_bench import parse_result_block
        opts = parse_result_block(a) or []
        k = rng.integers(6)
        if k == 1 and opts: opts = opts[:-1]
        if k == 2: opts = [dict(o, Option=o["Option"].lower() + " shop") for o in opts]
        if k == 3: opts = []
        if k == 4: return "<rewrite_query>q</rewrite_query><relevance_analysis>none</relevance_analysis>"
        if k == 5: return re.sub(r"<Result>.*</Result>", "", a, flags=re.DOTALL) + "<Result>" + json.dumps(opts, ensure_ascii=False) + "</Result>"
        return "<Result>" + json.dumps(opts, ensure_ascii=False) + "</Result>"
    if name == "Note-CHLW":
        import ast
        g = ast.literal_eval(a); cands = parse_fields(name, rec)["cands"]
        k = rng.integers(6)
        if k == 1: return "[]"
        if k == 2: return _lst(g + cands[:1])
        if k == 3: return _lst([c for c in cands if rng.random() < 0.5])
        if k == 4: return "Highlight: none"
        if k == 5: return "['a', 1]"
        return _lst(g)
    if name == "Note-QueryGen":
        return [a, a + " tips", a.upper(), a + "\nsecond line", "best " + a][rng.integers(5)]
    raise ValueError(name)

def perturbed_answers(data:dict, seed:int=0) -> dict:
    "Perturbed gold answers of every subset (seeded, deterministic)."
    from trustlib.config import derive_seed
    out = {}
    for i, (name, recs) in enumerate(data.items()):
        rng = np.random.default_rng(derive_seed(seed, "parity", i))
        pool = [r["answer"] for r in recs]
        out[name] = [perturb(name, r, rng, pool) for r in recs]
    return out

HANDMADE = {
    "Note-MRC-simple": (["['Great view 😍🏔️ from the top']", "['故宫门票要提前预约']", "[]", "not a list", "['a. b. c', 'd']", "['Same text here']"],
                        [["Great view from the top"], ["故宫门票需要提前预约"], [], ["x"], ["a b c. d"], ["Same text here"]]),
    "Note-CHLW": (["['CC mode']", "[]", "['a', 1]", "Sure: ['x', 'y']", "[]"], ["['CC mode', 'x']", "[]", "['a']", "['x']", "['z']"]),
    "Note-QueryCorr-topic": (["-1", "level 1", "no idea", "3", "10"], ["-1", "1", "2", "0", "1"]),
    "Note-MRC-complex": (['<Result>[{"Option": "故宫", "Reason": "r"}]</Result>', "<Result>[]</Result>", "no block",
                          '<Result>```json[{"Option": "The Forbidden City", "Reason": "r"}]```</Result>'],
                         ['<Result>[{"Option": "故宫博物院", "Reason": "r"}]</Result>', "<Result>[]</Result>", "<Result>[]</Result>",
                          '<Result>[{"Option": "the forbidden city", "Reason": "x"}]</Result>']),
    "Note-Taxonomy-single": (["Answer: Trends", "Food.", "Art, Travel"], ["Trends", "Food", "Art"]),
    "Note-Taxonomy-multiple": (["Beauty | Skincare | The Cleansing", "Beauty | Skincare"], ["Beauty | Skincare | Cleansing", "Beauty | Skincare | Cleansing"]),
    "Note-Hashtag-multiple": (["Wuhan, Bank\nmore", "Answer: a, b"], ["Wuhan, Savings, Bank", "a"]),
    "Note-NER": (["Fall", "high-end, niche, "], ["Fall", "high-end, niche"]),
    "Note-Gender": (["Yes.", "No, it is not"], ["Yes", "Yes"]),
}

# ---------------------------------------------------------------- the official code
def _stubs():
    "Stand-ins for the imports the official evaluator files make but do not use for scoring."
    reg = types.SimpleNamespace(register_module=lambda *a, **k: (lambda f: f))
    mods = {"opencompass": types.ModuleType("opencompass"), "opencompass.registry": types.ModuleType("opencompass.registry"),
            "opencompass.datasets": types.ModuleType("opencompass.datasets"), "opencompass.datasets.base": types.ModuleType("opencompass.datasets.base"),
            "opencompass.openicl": types.ModuleType("opencompass.openicl"),
            "opencompass.openicl.icl_evaluator": types.ModuleType("opencompass.openicl.icl_evaluator"),
            "datasets": types.ModuleType("datasets"), "sentence_transformers": types.ModuleType("sentence_transformers")}
    mods["opencompass.registry"].LOAD_DATASET = mods["opencompass.registry"].TEXT_POSTPROCESSORS = reg
    mods["opencompass.datasets.base"].BaseDataset = type("BaseDataset", (), {})
    mods["opencompass.openicl.icl_evaluator"].BaseEvaluator = type("BaseEvaluator", (), {"__init__": lambda self, *a, **k: None})
    mods["datasets"].Dataset = type("Dataset", (), {})
    return mods

def embed(texts):
    "The stand-in sentence embedding both sides use for QueryGen: unit character-trigram counts hashed into 64 buckets."
    import zlib
    out = np.zeros((len(texts), 64))
    for i, t in enumerate(texts):
        t = f"  {t.lower()} "
        for j in range(len(t) - 2): out[i, zlib.crc32(t[j:j + 3].encode()) % 64] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

class _ST:
    def __init__(self, *a, **k): pass
    def encode(self, text, convert_to_tensor=True):
        import torch
        return torch.tensor(embed([text])[0])

def load_official(path:str|Path) -> dict:
    "The official evaluator modules of SNS-Bench from a checkout at `path`, by file stem, plus 'text_postprocessors'."
    path = Path(path)
    base = path / "opencompass" / "opencompass"
    if not (base / "datasets" / "sns_bench").is_dir(): raise SystemExit(f"{path}: not an SNS-Bench checkout (no opencompass/opencompass/datasets/sns_bench)")
    saved = {k: sys.modules.get(k) for k in _stubs()}
    sys.modules.update(_stubs())
    import torch
    sys.modules["sentence_transformers"].SentenceTransformer = _ST
    sys.modules["sentence_transformers"].util = types.SimpleNamespace(pytorch_cos_sim=lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=0).reshape(1, 1))
    mods = {}
    try:
        for f in sorted((base / "datasets" / "sns_bench").glob("*.py")) + [base / "utils" / "text_postprocessors.py"]:
            if f.stem == "__init__": continue
            spec = importlib.util.spec_from_file_location(f"sns_official_{f.stem}", f)
            m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); mods[f.stem] = m
    finally:
        for k, v in saved.items():
            if v is None: sys.modules.pop(k, None)
            else: sys.modules[k] = v
    return mods

def official_score(mods:dict, name:str, preds:list, recs:list) -> float:
    "The reported score of subset `name` under the official evaluator code (the README's 'reported_score')."
    O = lambda m: mods[m]
    acc = lambda post: 100 * float(np.mean([post(p) == str(r["answer"]) for p, r in zip(preds, recs)]))
    with contextlib.redirect_stdout(io.StringIO()):
        if name == "Note-Taxonomy-single": return acc(O("taxonomy").note_taxonomy_postprocess)
        if name == "Note-Hashtag-single": return acc(O("hashtag").note_hashtag_single_postprocess)
        if name == "Note-Gender": return acc(O("gender").note_gender_postprocess)
        if name == "Note-QueryCorr-explain": return acc(O("querycorr_explain").note_querycorr_explain_postprocess)
        if name == "Note-Taxonomy-multiple":   # OpenCompass EMEvaluator on the taxonomy post-processor's output, references [answer]
            gp, post = O("text_postprocessors").general_postprocess, O("taxonomy").note_taxonomy_postprocess
            hits = [gp(post(p)) in set([gp(r["answer"])] + [r["answer"]]) for p, r in zip(preds, recs)]
            return 100 * float(np.mean(hits))
        if name == "Note-Hashtag-multiple":
            post = O("hashtag").note_hashtag_multi_postprocess
            return O("hashtag").NoteHashtagNEREvaluator().score([post(p) for p in preds], [post(r["answer"]) for r in recs])["f1"]
        if name == "Note-NER":
            post = O("ner").note_ner_postprocess
            return O("ner").NoteNEREvaluator().score([post(p, delimiter=",") for p in preds], [post(r["answer"], delimiter=",") for r in recs])["f1"]
        if name == "Note-QueryCorr-topic": return O("querycorr_topic").NoteQueryCorrTopicEvaluator().score(preds, [r["answer"] for r in recs])["success-macro-f1"]
        if name == "Note-CHLW": return O("chlw").NoteCommentHLWEvaluator().score(preds, [r["answer"] for r in recs])["success-f1"]
        if name == "Note-MRC-simple":
            s = O("mrc_simple").NoteMRCSimpleEvaluator().score(preds, ["".join(r["answer"]) for r in recs])
            return float(np.mean([s[k] for k in ("success-f1", "success-blue", "success-rouge-1", "success-rouge-2", "success-rouge-L")]))
        if name == "Note-MRC-complex":
            s = O("mrc_complex").NoteMRCComplexEvaluator().score(preds, [r["answer"] for r in recs])
            return float(np.mean([s[k] for k in ("success-total-f1", "success-option-f1", "success-option-em")]))
        if name == "Note-QueryGen": return float(O("querygen").NoteQueryGenEvaluator("stand-in").score(preds, [r["answer"] for r in recs])["final_scores"])
    raise ValueError(name)

def ours(name:str, preds:list, recs:list) -> float:
    from trustlib.evals.sns_bench import score_subset
    return float(score_subset(name, preds, recs, embed)["score"])

# ---------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", required=True, help="an SNS-Bench checkout")
    ap.add_argument("--data", default=None, help="folder with the 12 JSON files (default: $TRUSTLIB_SNS_BENCH or trustlib.data.sns_bench_dir())")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true", help=f"store the official numbers in {FIXTURE.relative_to(ROOT)}")
    a = ap.parse_args(argv)
    mods = load_official(a.official)
    import trustlib.evals.sns_bench as sb
    res = dict(seed=a.seed, handmade={}, perturbed={})
    for name, (preds, golds) in HANDMADE.items():
        recs = [dict(answer=g) for g in golds]
        res["handmade"][name] = dict(official=official_score(mods, name, preds, recs), ours=ours(name, preds, recs))
    data = sb.load_all(a.data) if a.data else (None if sb.sns_bench_missing("parity") else sb.load_all())
    if data is None: print("perturbed answers skipped: the SNS-Bench data are not available")
    else:
        for name, preds in perturbed_answers(data, a.seed).items():
            res["perturbed"][name] = dict(official=official_score(mods, name, preds, data[name]), ours=ours(name, preds, data[name]))
    width = max(map(len, sb.SUBSETS))
    for part in ("handmade", "perturbed"):
        for name, v in res[part].items():
            print(f"{part:9s} {name:{width}s} official {v['official']:9.4f}  ours {v['ours']:9.4f}  diff {v['ours'] - v['official']:+.2e}")
    if a.write:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        keep = dict(seed=a.seed, source="HC-Guo/SNS-Bench opencompass/opencompass/datasets/sns_bench (commit fbe9840)",
                    handmade={k: v["official"] for k, v in res["handmade"].items()}, perturbed={k: v["official"] for k, v in res["perturbed"].items()})
        FIXTURE.write_text(json.dumps(keep, indent=1) + "\n")
        print("wrote", FIXTURE.relative_to(ROOT))
    return res

if __name__ == "__main__":
    main()
