"""Rehearsals of the `full` profile (trustlib.rehearse): the stand-ins are in the real formats, a rehearsal is
marked and never published, and every rehearsable paper's `full` code path runs end to end offline (one item per
paper, network blocked). CPU seconds of each rehearsal (this process's children: the CLI, papermill, the kernel)
are printed and written to $TRUSTLIB_REHEARSE_REPORT when set; no test asserts a time."""
import json, os, resource, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

import trustlib.rehearse as RH
from trustlib.cli import main, publish_run
from trustlib.config import ConfigError, PAPERS
from trustlib.results import write_json
from conftest import ROOT, kernel_env


@pytest.fixture(scope="module")
def standins():
    return RH.build_standins()


def test_standins_are_in_the_real_formats(standins):
    import torch, transformers as T
    hub, data = standins/"hub", standins/"data"
    classes = dict(gpt2="GPT2LMHeadModel", gpt_neox="GPTNeoXForCausalLM", gemma2="Gemma2ForCausalLM", mistral="MistralForCausalLM", qwen2="Qwen2ForCausalLM",
                   bert="BertForMaskedLM", clip="CLIPModel", vit="ViTForImageClassification")
    with RH.rehearsal(standins):
        assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRUSTLIB_DATA"] == str(data.resolve())
        for hub_id, spec in RH.STANDIN_MODELS.items():
            repo = hub/("models--" + hub_id.replace("/", "--"))
            snap = repo/"snapshots"/(repo/"refs"/"main").read_text()
            assert (snap/"config.json").is_file() and (snap/"model.safetensors").is_file(), hub_id
            assert (snap/("tokenizer.json" if spec["tokenizer"] else "preprocessor_config.json")).is_file(), hub_id   # an image classifier has an image processor
            cfg = T.AutoConfig.from_pretrained(hub_id, local_files_only=True)             # resolved by hub id through the cache
            assert cfg.architectures == [classes[spec["arch"]]], hub_id
            n = cfg.vision_config.num_hidden_layers if spec["arch"] == "clip" else cfg.num_hidden_layers
            assert n == spec["layers"], hub_id                                             # the real model's depth
        tok = T.AutoTokenizer.from_pretrained("mistralai/Mistral-7B-v0.1", local_files_only=True)
        lm = T.AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1", local_files_only=True)
        ids = tok("World news: markets rose.", return_tensors="pt")["input_ids"]
        assert tok.decode(ids[0], skip_special_tokens=True) == "World news: markets rose."   # byte-level: any text round-trips
        with torch.no_grad(): assert lm(ids).logits.shape == (1, ids.shape[1], len(tok))
        from trustlib.data import load
        ff = load("fairface")                                                              # the registry's own loader
        assert set(ff.age) <= set(__import__("trustlib.data", fromlist=["_FAIRFACE_AGES"])._FAIRFACE_AGES) and Path(ff.path[0]).is_file()
        from PIL import Image
        assert Image.open(ff.path[0]).format == "JPEG"
        from trustlib.fairness.multicalibration import load_acs_income
        X, y, groups, names = load_acs_income()
        assert X.shape[1] == 9 and set(np.unique(y)) == {0, 1} and all(g.sum() > 0 for g in groups.values())
        raw = np.fromfile(data/"cifar10"/"cifar-10-batches-bin"/"test_batch.bin", dtype=np.uint8).reshape(-1, 3073)
        assert sorted(set(raw[:, 0])) == list(range(10))
        z = np.load(data/"cifar10"/"cifar10.npz"); assert z["X"].shape[1:] == (32, 32, 3) and z["X"].dtype == np.uint8
        with np.load(data/"l2h"/"logits.npz") as f: assert f["logits"].shape[1] == 100 and len(set(f["coarse_labels"])) == 20
        import zstandard
        pile = data/"corpora"/"monology--pile-uncopyrighted"/"00.jsonl.zst"                # The Pile's format: zstd JSON lines
        docs = [json.loads(l) for l in zstandard.ZstdDecompressor().decompressobj().decompress(pile.read_bytes()).decode().splitlines()]
        assert len(docs) >= 100 and all(d["text"].strip() and "pile_set_name" in d["meta"] for d in docs)
        from trustlib.data import sns_bench_dir
        from trustlib.evals.sns_bench import load_all, SUBSETS
        assert sns_bench_dir().resolve() == (data/"sns_bench").resolve()                  # never the licensed files in a rehearsal
        sns = load_all()                                                                   # the harness's own loader and its format checks
        assert {n: len(r) for n, r in sns.items()} == {n: s.n for n, s in SUBSETS.items()}
        assert (data/"sns_bench"/"Note-MRC-simple.json").read_text(encoding="utf-8").startswith('[\n    {\n        "query": ')
        from trustlib.interp.sop import load_imagenet_s, load_vit, vit_outputs
        val = load_imagenet_s("validation")                                                # the sop paper's own loader
        assert val.X.shape[1:] == (224, 224, 3) and set(val.y) <= {1, 222, 992} and val.seg.sum() > 0 and (val.valid == 0).any()
        vit = load_vit("google/vit-base-patch16-224")
        assert vit_outputs(vit, torch.zeros(1, 3, 224, 224))[0].shape == (1, 1000) and vit.config.patch_size == 16
    assert os.environ.get("HF_HUB_OFFLINE") != "1" or "HF_HUB_OFFLINE" in kernel_env()   # the context restored the environment
    assert not RH.rehearsing()


def test_sns_bench_standin_has_the_real_schema(standins):
    "Where the licensed files are present: the stand-in has their file names, item counts, field names (in order) and value types."
    from trustlib.data import sns_bench_missing, sns_bench_dir
    from trustlib.evals.sns_bench import load_all
    why = sns_bench_missing("this comparison")
    if why: pytest.skip(why)
    real, fake = sns_bench_dir(), standins/"data"/"sns_bench"
    assert sorted(p.name for p in fake.glob("*.json")) == sorted(p.name for p in real.glob("*.json"))
    shape = lambda recs: {tuple((k, type(v).__name__) for k, v in r.items()) for r in recs}
    R, F = load_all(real), load_all(fake)
    for n in R: assert len(F[n]) == len(R[n]) and shape(F[n]) == shape(R[n]), n
    key = lambda r: json.dumps(r, sort_keys=True)
    assert not any({key(r) for r in F[n]} & {key(r) for r in R[n]} for n in R)           # no record is a copy


def test_cache_is_keyed_and_reused(tmp_path):
    a = RH.build_standins(tmp_path, models=["gpt2"], data=["l2h_logits"])
    mtime = (a/"COMPLETE").stat().st_mtime_ns
    assert RH.build_standins(tmp_path, models=["gpt2"], data=["l2h_logits"]) == a and (a/"COMPLETE").stat().st_mtime_ns == mtime
    assert a.name.startswith(RH.standins_key()) and not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def test_table_covers_every_paper_and_says_why_not():
    assert sorted(r["paper"] for r in RH.FULL_PROFILE) == sorted(p.name for p in PAPERS)
    for r in RH.FULL_PROFILE:
        assert (r["paper"] in RH.REHEARSAL) != bool(r.get("not_rehearsed")), r["paper"]
        assert "estimate" in r["gpu_time"] and r["resources"] and r["ours"] and r["setup"]
    readme = (ROOT/"README.md").read_text()
    assert RH.full_profile_table().splitlines()[0] in readme
    if _NOT_REHEARSED is not None:
        with pytest.raises(ConfigError, match="cannot be rehearsed yet"): RH.rehearsal_params(_NOT_REHEARSED)


_NOT_REHEARSED = next((p.name for p in PAPERS if p.name not in RH.REHEARSAL), None)   # a paper whose full profile is not rehearsed yet


def _rehearsal_run(tmp_path, paper="toy", rid="full-rehearsal-0123456789", finished="2026-12-01T10:00:00+00:00"):
    d = tmp_path/"runs"/paper/rid
    write_json(d/"metrics.json", dict(paper=paper, run_id=rid, status="complete", profile="full", params={}, metrics={}, verdicts=[],
                                      rehearsal=True, finished=finished, notebook="x.ipynb"))
    return d


def test_publish_refuses_a_rehearsal(tmp_path, capsys):
    with pytest.raises(ConfigError, match="is a rehearsal"): publish_run(_rehearsal_run(tmp_path))
    assert main(["run", "robust_sketches", "--profile", "full", "--rehearse", "--publish"]) == 2
    assert "never published" in capsys.readouterr().err
    assert main(["run", "robust_sketches", "--profile", "cpu", "--rehearse"]) == 2
    assert "pass --profile full" in capsys.readouterr().err
    if _NOT_REHEARSED is not None:
        assert main(["run", _NOT_REHEARSED, "--profile", "full", "--rehearse", "--runs-dir", str(tmp_path/"r2")]) == 2
        assert "cannot be rehearsed yet" in capsys.readouterr().err and not (tmp_path/"r2").exists()


def test_report_publish_refuses_a_rehearsal(tmp_path, capsys):
    _rehearsal_run(tmp_path, "robust_sketches")
    assert main(["report", "--publish", "--profile", "full", "--runs-dir", str(tmp_path/"runs")]) == 2
    assert "are rehearsals" in capsys.readouterr().err
    from trustlib.report import collect_runs
    assert collect_runs(tmp_path/"runs").rehearsal.tolist() == [True]


def test_resolve_profile_in_a_rehearsal(monkeypatch, standins):
    from trustlib.config import resolve_profile
    monkeypatch.setenv("TRUSTLIB_REHEARSE", "1"); monkeypatch.setenv("TRUSTLIB_REHEARSE_ROOT", str(standins)); monkeypatch.setenv("IN_TEST", "1")
    for k in RH.rehearsal_env(standins):             # every variable activate() sets is restored after the test (setenv records it, absent or not)
        monkeypatch.setenv(k, "x"); monkeypatch.delenv(k)
    monkeypatch.setenv("TRUSTLIB_REHEARSE", "1"); monkeypatch.setenv("TRUSTLIB_REHEARSE_ROOT", str(standins))
    import huggingface_hub.constants as hc
    monkeypatch.setattr(hc, "HF_HUB_CACHE", hc.HF_HUB_CACHE); monkeypatch.setattr(hc, "HF_HUB_OFFLINE", hc.HF_HUB_OFFLINE)
    assert resolve_profile("full") == "full"                                  # not forced to smoke under a test runner
    assert os.environ["TRUSTLIB_DATA"] == str((standins/"data").resolve()) and hc.HF_HUB_CACHE == str((standins/"hub").resolve())
    with pytest.raises(ConfigError, match="a rehearsal runs the full profile"): resolve_profile("smoke")


def _children_cpu() -> float:
    from trustlib.runs import zygote_cpu   # a kernel forked by the session's zygote is not this process's child
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + zygote_cpu()


@pytest.mark.parametrize("paper", sorted(RH.REHEARSAL))
def test_rehearsal(paper, tmp_path, standins):
    "`trustlib run PAPER --profile full --rehearse` completes offline (sockets blocked), marked as a rehearsal."
    env = kernel_env()
    env["TRUSTLIB_NETLOG"] = str(tmp_path/"net.log")
    env.pop("TRUSTLIB_RUN_DIR", None)
    c0 = _children_cpu()
    r = subprocess.run([sys.executable, "-c", "import sys; from trustlib.cli import main; sys.exit(main(sys.argv[1:]))",
                        "run", paper, "--profile", "full", "--rehearse", "--runs-dir", str(tmp_path/"runs"), "-q"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    cpu = _children_cpu() - c0
    print(f"rehearsal {paper}: {cpu:.1f} s CPU")
    if os.environ.get("TRUSTLIB_REHEARSE_REPORT"):
        with open(os.environ["TRUSTLIB_REHEARSE_REPORT"], "a") as f: f.write(json.dumps(dict(paper=paper, cpu_seconds=round(cpu, 1), rc=r.returncode)) + "\n")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = list((tmp_path/"runs"/paper).iterdir())
    m = json.loads((run/"metrics.json").read_text())
    assert m["status"] == "complete" and m["rehearsal"] is True and m["profile"] == "full" and run.name.startswith("full-rehearsal-")
    assert json.loads((run/"result.json").read_text()).get("rehearsal") is True
    assert m["verdicts"], "a rehearsal grades the claims like a real run (the verdicts are never published)"
    assert not (tmp_path/"net.log").exists(), (tmp_path/"net.log").read_text()   # nothing tried the network


def test_cpo_standins_are_in_the_real_formats(standins):
    "The CPO stand-ins: microsoft/resnet-50 resolves by hub id to a ResNet with ResNet-50's stages and pooled features; CUB_200_2011 reads with the paper's loader."
    import torch, transformers as T
    from trustlib.interp import cbm
    with RH.rehearsal(standins):
        cfg = T.AutoConfig.from_pretrained("microsoft/resnet-50", local_files_only=True)
        assert cfg.architectures == ["ResNetForImageClassification"] and cfg.depths == [3, 4, 6, 3] and cfg.layer_type == "bottleneck"
        model, spec, rev = cbm.load_backbone("microsoft/resnet-50")
        assert spec["crop_pct"] == 0.875 and type(model).__name__ == "ResNetModel"
        ds = cbm.load_cub(standins / "data" / "cub" / "CUB_200_2011", concepts="image")
        assert ds.C.shape == (72, 312) and ds.train.sum() == 36
        E = cbm.embed_images(ds.paths[:3], model, spec)
        assert E.shape == (3, cfg.hidden_sizes[-1]) and np.isfinite(E).all()
