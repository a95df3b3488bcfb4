"""Developer helper: (re)build notebooks from their py:percent pairs and execute them in place.

Usage: python tools/py2nb.py scripts/core/00_config.py [...] [--no-exec]
The .ipynb in nbs/ stays the source of truth that nbdev exports from; this only helps authoring.
"""
import sys, subprocess
from pathlib import Path
import jupytext

KS = {"display_name": "Python 3", "language": "python", "name": "python3"}

def convert(py: Path) -> Path:
    rel = py.relative_to('scripts').with_suffix('.ipynb')
    out = Path('nbs') / rel
    nb = jupytext.read(py)
    nb.metadata = {"kernelspec": KS}
    out.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(nb, out)
    return out

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    for a in args:
        nbp = convert(Path(a))
        print('wrote', nbp)
        if '--no-exec' not in sys.argv:
            subprocess.run([sys.executable, '-m', 'papermill', '-k', 'python3', '--cwd', str(nbp.parent),
                            str(nbp), str(nbp)], check=True)
