"""Package build from settings.ini (nbdev 2 layout)."""
from configparser import ConfigParser
from pathlib import Path
import json
import setuptools
from setuptools.command.build_py import build_py

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).parent / 'settings.ini', encoding='utf-8')
c = cfg['DEFAULT']
split = lambda k: c.get(k, '').split()
extras = {k[len('extra_'):]: split(k) for k in c if k.startswith('extra_')}
extras['all'] = sorted({r for k, v in extras.items() if k not in ('ray', 'site') for r in v})   # site tools (Playwright) stay out
extras['dev'] = split('dev_requirements') + extras['all'] + extras['site']


class build_py_with_notebooks(build_py):
    """Ship the paper notebooks in the wheel (`trustlib/notebooks/papers/...`, outputs stripped), so that
    `trustlib list` and `trustlib run PAPER` work after `pip install` outside a checkout."""
    def run(self):
        super().run()
        if getattr(self, 'editable_mode', False): return   # an editable install finds them in the checkout
        self._write_build_info()
        src = Path(__file__).parent / 'nbs' / 'papers'
        dst = Path(self.build_lib) / 'trustlib' / 'notebooks' / 'papers'
        for nb in sorted(src.rglob('*.ipynb')):
            rel = nb.relative_to(src)
            if any(part.startswith(('.', '_')) for part in rel.parts): continue
            d = json.loads(nb.read_text(encoding='utf-8'))
            for cell in d.get('cells', []):
                if cell.get('cell_type') == 'code': cell['outputs'], cell['execution_count'] = [], None
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(d, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')

    def _write_build_info(self):
        "trustlib/_build.json: the commit the wheel is built from, so runs from a wheel record their code version."
        import subprocess
        git = lambda *a: subprocess.run(['git', '-C', str(Path(__file__).parent), *a], capture_output=True, text=True)
        head = git('rev-parse', 'HEAD')
        info = dict(version=c['version'], git_commit=head.stdout.strip() if head.returncode == 0 else None,
                    git_dirty=bool(git('status', '--porcelain', '--', 'trustlib', 'nbs').stdout.strip()) if head.returncode == 0 else None)
        (Path(self.build_lib) / 'trustlib' / '_build.json').write_text(json.dumps(info) + '\n', encoding='utf-8')

setuptools.setup(
    name=c['lib_name'], version=c['version'], description=c['description'],
    long_description=(Path(__file__).parent / 'README.md').read_text(encoding='utf-8'),
    long_description_content_type='text/markdown',
    author=c['author'], author_email=c['author_email'], license='Apache-2.0',
    url=c['git_url'], keywords=c['keywords'],
    classifiers=['Development Status :: 3 - Alpha', 'Intended Audience :: Science/Research',
                 'License :: OSI Approved :: Apache Software License',
                 'Programming Language :: Python :: 3.11'],
    packages=setuptools.find_packages(include=['trustlib', 'trustlib.*']),
    include_package_data=True, package_data={'trustlib': ['py.typed', 'resources/*']},
    python_requires=f">={c['min_python']}", install_requires=split('requirements'),
    extras_require=extras, zip_safe=False, cmdclass={'build_py': build_py_with_notebooks},
    entry_points={'console_scripts': split('console_scripts'), 'nbdev': ['trustlib=trustlib._modidx:d']},
)
