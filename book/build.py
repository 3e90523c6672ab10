"""Build the book for one profile: stage the executed notebooks, then `jupyter-book build`.

    python book/build.py --profile embedded --results results [--strict] [--workdir DIR]

1. Stage: every `book/experiments/NN_name` entry of `_toc.yml` becomes either a copy of
   `<results>/<profile>/notebooks/NN_name.ipynb` (the executed notebook, rendered as stored,
   never re-executed) or, when that notebook does not exist, a placeholder page saying the
   experiment has not been run for this profile. The staging folder is gitignored.
2. Environment: SPECDEC_BOOK_PROFILE and SPECDEC_RESULTS tell the chapter pages (which read
   result files through `specdec_study.pages`) what to show; PYTHONPATH gets the repository root;
   a private Jupyter kernelspec named `specdec` that runs *this* Python is put first on
   JUPYTER_PATH, so the chapter pages execute with this interpreter on any fresh clone (nothing is
   installed into the environment, and a stale user-level `specdec` kernel cannot shadow it).
3. Build: `jupyter-book build <workdir> --builder html -W -n --keep-going --all` into
   `<out>/_build/.partial` (`<out>` is `--path-output`, default the workdir); once it succeeds,
   its site replaces `<out>/_build/html`. Exits non-zero when the build fails. A build that
   fails or is stopped (a stop signal to this process stops jupyter-book and its kernels too)
   leaves the last whole site as it was, never a mix of two builds; the next build removes what
   it left. One build at a time per workdir and output (`_build/.book.lock`): a second one
   waits, saying so, rather than restaging the notebooks under the first. The results folder
   `<results>/<profile>` is read under its book lock, shared (`results.locks.reading`): an
   import into it is refused while a build reads it, and a build waits for an import under way.

Refused always (exit 2, one line, before anything is built): a result directory of the profile
that exists but is damaged (`specdec_study.results.schema.result_problem`: a file missing, a `{}`
summary, a config that is not an object, a CSV without rows), and an executed notebook that
papermill marked as failed or never finished (an error output, a failed or unfinished cell):
neither is ever rendered. An executed notebook that cannot be read (cut short) is said in one
line and shown as not run. `--strict` also refuses when an experiment's notebook or result is
missing (no placeholders), which is what `make book` wants for the committed embedded profile.
`--workdir` builds from a copy of the book's sources in another folder (tests use this so that
they never touch the checkout's staging folder).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import yaml
from filelock import FileLock, Timeout

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python book/build.py` from anywhere
    sys.path.insert(0, str(ROOT))

from specdec_study.environment.batch import run_group  # noqa: E402
from specdec_study.pages import EXPERIMENTS, damaged_results  # noqa: E402
from specdec_study.results.locks import reading  # noqa: E402

STAGING = Path("book") / "experiments"
BOOK_SOURCES = ("_config.yml", "_toc.yml", "book")
KERNEL_NAME = "specdec"
LOCK_NAME = ".book.lock"  # in <workdir>/_build and <out>/_build: one build at a time
PARTIAL = ".partial"  # <out>/_build/.partial: jupyter-book's output while it builds
PREVIOUS = ".previous"  # the last site, for the moment the new one replaces it
BUILD_RECORD = ".specdec-build.json"  # in the published site: the profile and results it shows
COLAB_BADGE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)\n*")


def toc_experiments(toc_path: Path) -> list[str]:
    """The `book/experiments/<name>` entries of the toc, in order (names without suffix)."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith(f"{STAGING.as_posix()}/"):
                found.append(f.split("/")[-1].removesuffix(".ipynb").removesuffix(".md"))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return found


def title_of(name: str) -> str:
    """'04_context_sweep' -> 'Context sweep'."""
    words = name.split("_", 1)[-1].replace("_", " ")
    return words[:1].upper() + words[1:]


def placeholder(name: str, profile: str, results: Path) -> str:
    return (
        f"# {title_of(name)} (not run)\n\n"
        f":::{{note}}\nThe experiment `{name}` has not been run for the profile `{profile}`: "
        f"there is no executed notebook at `{results / profile / 'notebooks' / (name + '.ipynb')}`."
        f"\n\nRun it with `make evaluate PROFILE={profile}` (all experiments) or with papermill "
        f"(see the reproducibility chapter), then rebuild the book.\n:::\n"
    )


def _has_title(nb) -> bool:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return True
    return False


def squash_streams(outputs: list) -> list:
    """Join consecutive stream outputs of one name and keep what a terminal would show: the text
    after the last carriage return of each line (a tqdm bar's final state, not every refresh)."""
    out: list = []
    for o in outputs:
        if (
            o.get("output_type") == "stream"
            and out
            and out[-1].get("output_type") == "stream"
            and out[-1].get("name") == o.get("name")
        ):
            out[-1]["text"] += o["text"]
        else:
            out.append(o)
    for o in out:
        if o.get("output_type") == "stream":
            lines = o["text"].split("\n")
            kept = [ln.rstrip("\r").rsplit("\r", 1)[-1] for ln in lines]
            o["text"] = "\n".join(ln for i, ln in enumerate(kept) if ln or i == len(kept) - 1)
    return [o for o in out if o.get("output_type") != "stream" or o["text"].strip()]


class BookError(Exception):
    """Why the book is not built, in one line (exit status 2)."""


def read_notebook(src: Path):
    """The executed notebook at src, or None (said in one line) when it cannot be read: a file
    cut short (papermill killed while saving, a full disk) is a notebook not run."""
    try:
        return nbformat.read(src, as_version=4)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        print(f"book: {src} cannot be read ({type(e).__name__}); shown as not run", file=sys.stderr)
        return None


def notebook_failure(nb) -> str | None:
    """Why an executed notebook must not be rendered (None when papermill finished it cleanly)."""
    pm = nb.metadata.get("papermill") or {}
    if pm.get("exception"):
        return "papermill marked it as failed"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        status = (cell.metadata.get("papermill") or {}).get("status")
        if status in ("failed", "running", "pending") and cell.source.strip():
            return f"cell {i} is {status}"
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return f"cell {i} raised an error"
    return None


def stage_notebook(src: Path, dst: Path, name: str, profile: str) -> None:
    """Copy an executed notebook for rendering: a title if it has none, a provenance note, tqdm
    refreshes squashed to their final state, the Colab set-up cell folded (hide-input), and the
    Colab badge dropped (the page's launch button does the same without a remote image)."""
    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":  # the page has its own Colab button; no remote image
            cell.source = COLAB_BADGE.sub("", cell.source).lstrip("\n")
        if cell.cell_type != "code":
            continue
        cell.outputs = squash_streams(cell.get("outputs", []))
        if "google.colab" in cell.source:
            tags = cell.metadata.setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    note = nbformat.v4.new_markdown_cell(
        f":::{{note}}\nThe executed notebook of the profile `{profile}`, rendered as it was "
        "stored by the batch: nothing on this page was re-run to build the book.\n:::"
    )
    note.metadata["tags"] = ["specdec-provenance"]
    if not _has_title(nb):
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"# {title_of(name)}"))
    # after the cell that holds the title
    at = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and any(ln.startswith("# ") for ln in c.source.splitlines())
    )
    nb.cells.insert(at + 1, note)
    nbformat.write(nb, dst)


def stage_claims(profile: str, results: Path, dest: Path) -> None:
    """Write dest/claims.csv: every number the chapters state from the profile's files, with its
    interval, n, source and recomputing expression (`python -m specdec_lib claims --json`, as a
    table; the reproducibility chapter links it). Nothing when the profile has no results."""
    import pandas as pd

    from specdec_study.reporting.claims import claims, claims_json
    from specdec_study.results.read import load_results

    p = load_results(profile, results)
    if p.empty:
        return
    dest.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(claims_json(claims(p))).to_csv(dest / "claims.csv", index=False)


def stage_files(profile_dir: Path, dest: Path) -> None:
    """Copy each experiment's CSV/JSON result files to dest/<experiment>/ (the reproducibility
    chapter links them, so a reader gets the exact files the book was built from). Hidden
    folders are not results: `.<experiment>.*` is one being published by a batch that runs now;
    nor is a folder without rows (a bench run: the performance chapter names its own)."""
    if not profile_dir.is_dir():
        return
    published = (p for p in profile_dir.iterdir() if not p.name.startswith("."))
    for d in sorted(p for p in published if (p / "per_prompt.csv").is_file()):
        for f in sorted(d.iterdir()):
            if f.is_file() and f.suffix in (".csv", ".json"):
                (dest / d.name).mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest / d.name / f.name)


def stage(workdir: Path, profile: str, results: Path, strict: bool) -> dict[str, str]:
    """Fill <workdir>/book/experiments; returns name -> 'notebook' | 'placeholder'."""
    names = toc_experiments(workdir / "_toc.yml")
    staging = workdir / STAGING
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    (staging / ".gitignore").write_text("*\n", encoding="utf-8")
    status: dict[str, str] = {}
    missing = []
    failed = []
    for name in names:
        src = results / profile / "notebooks" / f"{name}.ipynb"
        nb = read_notebook(src) if src.is_file() else None
        if nb is not None:
            why = notebook_failure(nb)
            if why is not None:
                failed.append(f"{name} ({why})")
                continue
            stage_notebook(src, staging / f"{name}.ipynb", name, profile)
            status[name] = "notebook"
        else:
            missing.append(name)
            (staging / f"{name}.md").write_text(
                placeholder(name, profile, results), encoding="utf-8"
            )
            status[name] = "placeholder"
    if failed:
        raise BookError(
            f"failed notebooks are not rendered: {', '.join(failed)} in "
            f"{results / profile / 'notebooks'}; rerun them (make evaluate PROFILE={profile})"
        )
    stage_files(results / profile, staging / "files")
    stage_claims(profile, results, staging)
    if strict and missing:
        raise BookError(
            f"--strict: no executed notebook for {', '.join(missing)} "
            f"in {results / profile / 'notebooks'}"
        )
    return status


def check_results(profile: str, results: Path) -> None:
    """Refuse damaged result directories."""
    damaged = damaged_results(profile, results)
    if damaged:
        listed = ", ".join(f"{e} ({why})" for e, why in damaged.items())
        raise BookError(
            f"damaged results are not rendered: {listed} in {results / profile}; "
            f"make evaluate PROFILE={profile} recomputes them"
        )


def check_complete(profile: str, results: Path) -> None:
    """--strict: every experiment has a result directory."""
    missing = [e for e in EXPERIMENTS if not (results / profile / e).is_dir()]
    if missing:
        raise BookError(f"--strict: no result for {', '.join(missing)} in {results / profile}")


def private_kernelspec(where: Path) -> Path:
    """A `specdec` kernelspec running sys.executable; returns the folder for JUPYTER_PATH."""
    spec_dir = where / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (specdec)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return where


def copy_sources(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    for rel in BOOK_SOURCES:
        src, dst = ROOT / rel, workdir / rel
        if src.is_dir():
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(
                src, dst, ignore=shutil.ignore_patterns("experiments", "__pycache__", "_build")
            )
        else:
            shutil.copy2(src, dst)


@contextlib.contextmanager
def book_lock(folders: list[Path]) -> Iterator[None]:
    """Hold `<folder>/_build/.book.lock` of each folder for the whole build: a second build
    into the same staging folder or output (two `make evaluate` for different profiles each end
    with `make book` into the checkout) waits, said once, instead of restaging the notebooks
    under the first. Taken in sorted order, so two builds never hold one each; an OS lock, so a
    killed build never leaves it stale."""
    held: list[FileLock] = []
    try:
        for folder in sorted(set(folders)):
            (folder / "_build").mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(folder / "_build" / LOCK_NAME))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                print(
                    f"book: another book build is using {folder}; waiting for it to finish",
                    file=sys.stderr,
                    flush=True,
                )
                lock.acquire()
            held.append(lock)
        yield
    finally:
        for lock in reversed(held):
            lock.release()


def clear_leftovers(build_dir: Path) -> None:
    """Remove what a stopped build left in build_dir: its partial output and a replaced site."""
    for name in (PARTIAL, PREVIOUS):
        shutil.rmtree(build_dir / name, ignore_errors=True)


def publish_site(build_dir: Path, builder: str) -> Path:
    """Move the finished site from <build_dir>/.partial/_build/<builder> to
    <build_dir>/<builder> in place of the last one; returns it. A build stopped before this
    leaves the last whole site untouched; stopped between the two renames, it leaves no site,
    never a mix of two."""
    site = build_dir / builder
    if site.exists():
        site.rename(build_dir / PREVIOUS)
    (build_dir / PARTIAL / "_build" / builder).rename(site)
    clear_leftovers(build_dir)
    return site


def build_env(profile: str, results: Path, kernels: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SPECDEC_BOOK_PROFILE"] = profile
    env["SPECDEC_RESULTS"] = str(results)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["JUPYTER_PATH"] = os.pathsep.join(
        [str(kernels), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    )
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernel's debugger nags on stderr
    env.setdefault("WANDB_MODE", "disabled")
    return env


def build(args: argparse.Namespace, results: Path, workdir: Path, out: Path) -> int:
    """Stage, build into <out>/_build/.partial, then move the finished site into place (the
    caller holds the book lock of workdir and out)."""
    build_dir = out / "_build"
    clear_leftovers(build_dir)  # of a build that was stopped: never part of a site
    try:
        if workdir != ROOT:
            copy_sources(workdir)
        status = stage(workdir, args.profile, results, args.strict)
        if args.strict:
            check_complete(args.profile, results)
    except BookError as e:
        print(f"book: error: {e}", file=sys.stderr)
        return 2
    kernels = private_kernelspec(build_dir / ".jupyter")
    env = build_env(args.profile, results, kernels)
    staged = sum(v == "notebook" for v in status.values())
    print(
        f"book: profile {args.profile}, results {results}: {staged} executed notebooks, "
        f"{len(status) - staged} placeholders",
        flush=True,
    )
    cmd = [
        sys.executable,
        "-c",
        "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
        "build",
        str(workdir),
        "--path-output",
        str(build_dir / PARTIAL),
        "--builder",
        args.builder,
        "-W",
        "-n",
        "--keep-going",
        "--all",
    ]
    rc = run_group(cmd, cwd=workdir, env=env)  # a stop signal stops jupyter-book and its kernels
    if rc:
        print(
            f"book: jupyter-book build failed (exit {rc}); {build_dir / args.builder} is left as "
            f"it was, the failed build is in {build_dir / PARTIAL}",
            file=sys.stderr,
        )
        return rc
    site = publish_site(build_dir, args.builder)
    # which profile and results this site shows (tests/test_book_words.py reads it)
    (site / BUILD_RECORD).write_text(
        json.dumps({"profile": args.profile, "results": str(results.resolve())}), encoding="utf-8"
    )
    print(f"book: {site / 'index.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=os.environ.get("SPECDEC_BOOK_PROFILE", "embedded"))
    ap.add_argument("--results", default=os.environ.get("SPECDEC_RESULTS", "results"))
    ap.add_argument("--strict", action="store_true", help="fail if an experiment is missing")
    ap.add_argument("--workdir", type=Path, default=None, help="build from a copy of the book")
    ap.add_argument("--path-output", type=Path, default=None, help="default: <workdir>")
    ap.add_argument("--builder", default="html")
    args = ap.parse_args(argv)

    results = Path(args.results)
    results = (results if results.is_absolute() else Path.cwd() / results).resolve()
    if not (results / args.profile).is_dir():
        print(f"book: no results for profile {args.profile!r} in {results}", file=sys.stderr)
        if args.strict:
            return 2
    workdir = (args.workdir or ROOT).resolve()
    out = (args.path_output or workdir).resolve()
    with reading(results / args.profile):  # an import waits, or this waits for an import
        try:
            check_results(args.profile, results)  # before the book lock: touches no build folder
        except BookError as e:
            print(f"book: error: {e}", file=sys.stderr)
            return 2
        with book_lock([workdir, out]):
            return build(args, results, workdir, out)


if __name__ == "__main__":
    sys.exit(main())
