"""Slim evalcheck's virtualenv in the image's build stage (Dockerfile): drop what a run never
reads, compile bytecode once, and pack the big pure-bytecode packages into one zip.

Run by the venv's own Python, in its site-packages (the working directory):

    /opt/evalcheck/bin/python /src/image_slim.py

What goes, and why a run never reads it:
- ``*-nspkg.pth``: old setuptools namespace hooks for ``google``/``google.cloud``; Python 3
  finds those namespaces without them, and they ran at every interpreter start (~10 ms).
- test suites (``tests``/``test`` folders inside packages), type stubs, ``.proto`` sources
  (the ``_pb2`` modules carry the compiled descriptors), ``py.typed`` markers,
  ``gapic_metadata.json`` (code-generator metadata).
- google-cloud-aiplatform's Ray on Vertex AI integration (``vertex_ray``, twice): it imports
  ``ray``, which is not installed, so it can never load.
- third-party ``.py`` sources once compiled: sourceless ``.pyc`` beside where the ``.py`` was.
  evalcheck's own source stays (readable tracebacks), and anyio's, which reads its source
  when imported (anyio/_lazyimport.py).

Packing: a package of only bytecode (no extension module, no data file read through
``__file__``) goes into ``_evalcheck_bytecode.zip``; a finder that a ``.pth`` line installs
at start-up imports those packages from it (zipimport), and only them, as from a folder,
namespaces (``google.cloud``) included. The
bytecode of google-cloud-aiplatform's generated clients is about 70 MB and packs to a
quarter. What every start imports (``evalcheck --help``, the Action's entrypoint) stays on
disk: it must not pay for reading the zip's directory and inflating.

Checked here, so that a broken image fails its build: every package that imported before
packing imports after it, and the modules each installed extra needs import at all.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

KEEP_SOURCE = {"checker", "anyio", "evalcheck_adk_bridge"}
# Read through their folder at run time (joblib starts workers from its own files): on disk.
STAY_ON_DISK = {"joblib"}
INERT_NAMES = {"py.typed", "gapic_metadata.json"}
INERT_SUFFIXES = (".pyi", ".proto")
# Imported by every start: never packed (and their packages with them).
STARTUP = ["checker.cli", "checker.action.entry"]
NEVER_LOADS = ["vertex_ray", "google/cloud/aiplatform/vertex_ray"]
ZIP_NAME = "_evalcheck_bytecode.zip"
FINDER = "_evalcheck_bytecode"
# Written beside the zip, imported at every start by a .pth line. The zip is not on sys.path:
# there, every import that scans all of it (a namespace such as checker, an absent module
# such as nt or _winapi, which the standard library tries) would read the zip's directory
# (~7 ms); this finder opens it only for the packages it holds.
FINDER_SOURCE = '''"""Imports the packages packed into _evalcheck_bytecode.zip, and only them
(written by scripts/image_slim.py when the image was built)."""
import sys
import zipimport

ZIP = __file__.rpartition("/")[0] + "/_evalcheck_bytecode.zip"
UNITS = frozenset()


class PackedFinder:
    """After the path finder: a packed package, where the folder holds no such name."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in UNITS:
            return None
        parent = name.rpartition(".")[0].replace(".", "/")
        return zipimport.zipimporter(ZIP + "/" + parent if parent else ZIP).find_spec(name)

    @staticmethod
    def invalidate_caches():
        pass


if PackedFinder not in sys.meta_path:
    sys.meta_path.append(PackedFinder)
'''
# distribution installed -> modules evalcheck imports from it (checker/metrics, judges).
REQUIRED = {
    "evalcheck-adk": ["checker.cli", "checker.action.entry", "rouge_score.rouge_scorer"],
    "google-genai": ["google.genai", "yaml"],
    "google-cloud-aiplatform": [
        "agentplatform", "agentplatform._genai.evals", "pandas",
        "vertexai.evaluation.metrics.metric_prompt_template_examples"],
}


def say(message: str) -> None:
    print(f"image_slim: {message}", flush=True)


def prune(site: Path) -> None:
    for pth in site.glob("*-nspkg.pth"):
        pth.unlink()
    for dead in NEVER_LOADS:
        shutil.rmtree(site / dead, ignore_errors=True)
    for top in site.iterdir():
        if not top.is_dir() or top.name.endswith((".dist-info", ".egg-info")):
            continue
        for folder in sorted(top.rglob("*"), reverse=True):
            if folder.is_dir() and folder.name in ("tests", "test"):
                shutil.rmtree(folder, ignore_errors=True)
    for path in site.rglob("*"):
        if path.is_file() and (path.name in INERT_NAMES or path.name.endswith(INERT_SUFFIXES)):
            if not path.parent.name.endswith((".dist-info", ".egg-info")):
                path.unlink()


def compile_and_drop_sources(site: Path) -> None:
    for top in sorted(site.iterdir()):
        if top.name in KEEP_SOURCE:
            ok = compileall.compile_dir(top, quiet=1, workers=0)
        elif top.is_dir() and not top.name.endswith((".dist-info", ".egg-info")):
            ok = compileall.compile_dir(top, quiet=1, workers=0, legacy=True)
        elif top.suffix == ".py":
            ok = compileall.compile_file(top, quiet=1, legacy=True)
        else:
            continue
        if not ok:
            sys.exit(f"image_slim: compiling {top.name} failed")
    for path in site.rglob("*.py"):
        if path.relative_to(site).parts[0] not in KEEP_SOURCE:
            path.unlink()


def units(folder: Path, site: Path) -> list[Path]:
    """Importable units under a folder: packages (with ``__init__.pyc``) and modules; the
    namespaces (folders without it) are opened up."""
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.endswith((".dist-info", ".egg-info")) or path.name == "__pycache__":
            continue
        if path.is_dir() and "." not in path.name:
            found += [path] if (path / "__init__.pyc").exists() else units(path, site)
        elif path.suffix == ".pyc" and folder != site:
            continue  # a namespace's loose module: rare, stays
        elif path.suffix == ".pyc":
            found.append(path)
    return found


def packable(unit: Path, name: str, startup: set[str]) -> bool:
    if unit.name in KEEP_SOURCE or unit.name in STAY_ON_DISK or name in startup:
        return False
    files = [unit] if unit.is_file() else [p for p in unit.rglob("*") if p.is_file()]
    return all(p.suffix == ".pyc" for p in files)


def startup_units() -> set[str]:
    """Every package (and namespace portion) a start imports, with each of its parents."""
    probe = ("import importlib, sys\n"
             f"for name in {STARTUP!r}: importlib.import_module(name)\n"
             "print(' '.join(sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd="/", check=True)
    names = set()
    for module in done.stdout.split():
        parts = module.split(".")
        names.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return names


def module_name(unit: Path, site: Path) -> str:
    return ".".join(unit.relative_to(site).with_suffix("").parts)


def importable(names: list[str]) -> dict[str, str]:
    """name -> '' if it imports, else the error: one fresh interpreter, as a run starts."""
    probe = ("import importlib, json, sys\nout = {}\nfor name in sys.argv[1:]:\n"
             "    try:\n        importlib.import_module(name); out[name] = ''\n"
             "    except BaseException as exc:\n        out[name] = f'{type(exc).__name__}: {exc}'\n"
             "print(json.dumps(out))\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe, *names], capture_output=True, text=True,
                          env=env, cwd="/", check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def pack(site: Path, chosen: list[Path]) -> None:
    with zipfile.ZipFile(site / ZIP_NAME, "w", zipfile.ZIP_DEFLATED) as archive:
        folders: set[str] = set()
        for unit in chosen:
            files = [unit] if unit.is_file() else sorted(p for p in unit.rglob("*") if p.is_file())
            for path in files:
                parts = path.relative_to(site).parts
                # Explicit folder entries: zipimport finds a namespace portion only by them.
                folders.update("/".join(parts[:depth]) + "/" for depth in range(1, len(parts)))
                archive.write(path, "/".join(parts))
        for folder in sorted(folders):
            archive.writestr(zipfile.ZipInfo(folder), b"")
    # Namespace folders (google/cloud/...) stay on disk, if empty: Python finds the namespace
    # there, and the packed packages in it through the finder.
    for unit in chosen:
        shutil.rmtree(unit) if unit.is_dir() else unit.unlink()
    units = ", ".join(repr(module_name(unit, site)) for unit in chosen)
    finder = site / f"{FINDER}.py"
    finder.write_text(FINDER_SOURCE.replace("UNITS = frozenset()", f"UNITS = frozenset({{{units}}})"))
    if not compileall.compile_file(finder, quiet=1):
        sys.exit(f"image_slim: compiling {finder.name} failed")
    (site / f"{FINDER}.pth").write_text(f"import {FINDER}\n")


def required_modules() -> list[str]:
    from importlib.metadata import PackageNotFoundError, distribution

    names = []
    for dist, modules in REQUIRED.items():
        try:
            distribution(dist)
        except PackageNotFoundError:
            continue
        names += modules
    return names


def main() -> int:
    site = Path.cwd()
    if site.name != "site-packages":
        sys.exit("image_slim: run me in the virtualenv's site-packages")
    prune(site)
    compile_and_drop_sources(site)
    startup = startup_units()
    chosen = [u for u in units(site, site) if packable(u, module_name(u, site), startup)]
    names = [module_name(u, site) for u in chosen]
    before = importable(names)
    pack(site, chosen)
    after = importable(names + required_modules())
    broken = {n: after[n] for n in names if before[n] == "" and after[n] != ""}
    missing = {n: e for n, e in after.items() if n not in before and e}
    if broken or missing:
        for name, error in {**broken, **missing}.items():
            say(f"{name} does not import: {error}")
        return 1
    size = (site / ZIP_NAME).stat().st_size
    say(f"packed {len(chosen)} packages into {ZIP_NAME} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
