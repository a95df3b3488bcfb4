"Every command from a wheel, outside any checkout: the wheel unpacked on PYTHONPATH (ahead of the editable install), run from a temp folder."
import json, os, subprocess, sys, zipfile
from pathlib import Path
import pytest
from conftest import kernel_env

ROOT = Path(__file__).resolve().parents[1]

@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(d), "-q"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    site = d/"site"; zipfile.ZipFile(next(d.glob("trustlib_icml25-*.whl"))).extractall(site)
    work = d/"work"; work.mkdir()                       # no settings.ini here or above (tmp is outside the checkout)
    env = kernel_env(); env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]]); env.pop("TRUSTLIB_RUNS", None)
    return site, work, env

def cli(env, cwd, *args, ok=True):
    r = subprocess.run([sys.executable, "-c", "import sys; from trustlib.cli import main; sys.exit(main(sys.argv[1:]))", *args],
                       capture_output=True, text=True, cwd=cwd, env=env, timeout=1500)
    if ok: assert r.returncode == 0, f"trustlib {' '.join(args)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r

def test_the_wheel_is_what_runs(wheel_env):
    site, work, env = wheel_env
    r = subprocess.run([sys.executable, "-c", "import trustlib, trustlib.runs as R; print(trustlib.__file__); print(R.package_checkout()); print(R.nbs_path())"],
                       capture_output=True, text=True, cwd=work, env=env)
    f, checkout, nbs = r.stdout.split()
    assert f.startswith(str(site)) and checkout == "None" and nbs.startswith(str(site))
    assert cli(env, work, "--version").stdout.strip()
    assert "disparate_benefits" in cli(env, work, "list").stdout

def test_notebook_command_copies_the_shipped_notebook(wheel_env):
    site, work, env = wheel_env
    out = Path(cli(env, work, "notebook", "label_smoothing", "mine", "-q").stdout.strip())
    got = work/out if not out.is_absolute() else out
    assert got.name == "label_smoothing.ipynb" and got.read_bytes() == next(site.rglob("papers/*/label_smoothing.ipynb")).read_bytes()
    again = cli(env, work, "notebook", "label_smoothing", "mine", ok=False)
    assert again.returncode != 0 and "--force" in again.stderr                        # never overwrites silently
    cli(env, work, "notebook", "label_smoothing", "mine", "--force", "-q")
    bad = cli(env, work, "notebook", "no_such_paper", ok=False)
    assert bad.returncode != 0 and "no_such_paper" in bad.stderr

@pytest.mark.notebook
def test_sweep_and_report_outside_a_checkout(wheel_env):
    "A one-point smoke sweep of a paper and the report over it, from the wheel's own notebooks."
    site, work, env = wheel_env
    (work/"spec.yaml").write_text("paper: l2h\nprofile: smoke\n")
    r = cli(env, work, "sweep", "spec.yaml", "-q")
    assert "1 complete" in r.stdout, r.stdout
    [m] = [json.loads(p.read_text()) for p in (work/"runs"/"l2h").glob("*/metrics.json")]
    assert m["status"] == "complete" and m["versions"].get("trustlib-icml25")
    assert "not inside a trustlib checkout" not in r.stderr
    rep = cli(env, work, "report", "--runs-dir", "runs", "--profile", "smoke")
    assert "l2h" in rep.stdout
