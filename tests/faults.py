"""Seeded fault injection on the smoke profile (issue 25): faults at random points of a small
batch, each followed by a rerun that must give the uninterrupted run's tokens.

Fault i of seed s is kind KINDS[i % len(KINDS)], its parameters drawn from Random(f"{s}-{i}"):
- sigkill / sigterm: a worker process runs the batch's experiments; it is killed (its whole
  process group) a random time after a random experiment starts; the experiments from that one
  on were removed first (or FORCE=1 replaces them), so the kill lands in their compute or
  publish. A checkpoint left behind is then damaged half the time (torn, NUL bytes, non-UTF-8).
- damage: a published result file (per_prompt.csv, summary.json, config.json, env.json) torn
  at a random byte, overwritten with NUL bytes, or given a non-UTF-8 byte.
- disk: the batch into a tiny tmpfs (root) or under a small RLIMIT_FSIZE (a write fails),
  then the rerun with room again.
- wandb: the batch with a W&B key and a server that never answers (W&B must fall back).
- import: `import-bundle --replace` of the reference results' bundle, killed (SIGKILL or SIGINT)
  a random time into it: every experiment must still be there and whole (the old result or the
  new one, never neither), and an import run again completes and leaves nothing behind.
After each fault: no result folder is half-written (every folder present passes the schema
check), the rerun's results equal the reference run's in every deterministic column
(results.reproduction), no temporary folder or checkpoint is left, no process of the worker's group
is left, and the planted HF_TOKEN / WANDB_API_KEY appear in no file (results, W&B, logs).

    python tests/faults.py --faults 4 --seed 1          # CI's sample (under a minute)
    python tests/faults.py --faults 50 --seed 0         # `make faults`: 20 kills, minutes
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specdec_study.results.reproduction import DETERMINISTIC, KEY_COLUMNS  # noqa: E402
from specdec_study.results.schema import result_problem  # noqa: E402

PROFILE = "smoke"
CALLS = {
    "baseline": 'study.run(S, "baseline")',
    "bigram": 'study.run(S, "bigram")',
    "context_sweep": 'study.run(S, "context_sweep")',
}
EXPERIMENTS = list(CALLS)
KINDS = ("sigkill", "damage", "sigterm", "disk", "wandb", "import")  # CI runs the first four
RESULT_FILES = ("per_prompt.csv", "summary.json", "config.json", "env.json")
EXIT_WAIT_S = 5.0  # a batch without a W&B server exits within this after its last experiment
PLANTED = {
    "HF_TOKEN": "hf_PlantedFaultInjectionToken0123456789",
    "WANDB_API_KEY": "plantedfaultkey0123456789abcdef012345678",
}
WORKER = f"""
import sys
from specdec_study import study
S = study.setup({PROFILE!r}, results_dir=sys.argv[1])
calls = {CALLS!r}
for name in sys.argv[2].split(","):
    print("start", name, flush=True)
    eval(calls[name], {{"study": study, "S": S}})
    print("done", name, flush=True)
"""


@dataclass
class Outcome:
    """What one fault did and what the checks found (empty problems: it held)."""

    what: str
    problems: list[str] = field(default_factory=list)
    note: str = ""


# ------------------------------------------------------------------ the batch and its checks


def base_env() -> dict[str, str]:
    """The environment of every run: planted secrets, W&B off, no FORCE, the repository first."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE", "WANDB_BASE_URL")}
    env.update(PLANTED, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return env


def rerun(results: Path, log: Path) -> None:
    """The batch in this process (the rerun after a fault): reuses what is whole; its output
    goes to the log."""
    from specdec_study import study

    with open(log, "a", encoding="utf-8") as f, contextlib.redirect_stdout(f):
        with contextlib.redirect_stderr(f):
            S = study.setup(PROFILE, results_dir=str(results))
            for name in EXPERIMENTS:
                eval(CALLS[name], {"study": study, "S": S})


def deterministic(d: Path) -> list[tuple[str, ...]]:
    """A result's rows in their identifying and deterministic columns, sorted."""
    with open(d / "per_prompt.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in (*KEY_COLUMNS, *DETERMINISTIC) if rows and c in rows[0]]
    return sorted(tuple(r[c] for c in cols) for r in rows)


def half_written(results: Path) -> list[str]:
    """Result folders present that are not whole (what a reader could take for a result)."""
    folder = results / PROFILE
    if not folder.is_dir():
        return []
    out = []
    for d in sorted(folder.iterdir()):
        if d.is_dir() and not d.name.startswith("."):
            why = result_problem(d, study=True)
            if why is not None:
                out.append(f"{d.name} is half-written after the fault ({why})")
    return out


def leftovers(results: Path) -> list[str]:
    """Temporary folders and checkpoints left after a complete rerun."""
    folder = results / PROFILE
    return [
        f"left behind: {p.name}"
        for p in sorted(folder.iterdir())
        if p.name.startswith(".") and (p.is_dir() or ".partial-" in p.name)
    ]


def unreadable(results: Path) -> list[str]:
    """Files of published results that do not parse (a damaged file the rerun reused)."""
    out = []
    for f in sorted((results / PROFILE).glob("[!.]*/*")):
        try:
            if f.suffix == ".json":
                json.loads(f.read_bytes().decode("utf-8"))
            elif f.suffix == ".csv":
                f.read_bytes().decode("utf-8")
                if b"\0" in f.read_bytes():
                    raise ValueError("a NUL byte")
        except ValueError as e:
            out.append(f"{f.parent.name}/{f.name} is unreadable after the rerun ({e})")
    return out


def differences(results: Path, reference: dict[str, list[tuple[str, ...]]]) -> list[str]:
    """Experiments whose rerun rows differ from the reference run's, or that are not whole."""
    out = []
    for name, rows in reference.items():
        d = results / PROFILE / name
        why = result_problem(d, study=True)
        if why is not None:
            out.append(f"{name} is not whole after the rerun ({why})")
        elif deterministic(d) != rows:
            out.append(f"{name}: the rerun's tokens differ from the uninterrupted run's")
    return out


def secrets_in(*roots: Path) -> list[str]:
    """Files under roots that hold a planted secret."""
    hits = []
    for root in roots:
        for p in root.rglob("*") if root.is_dir() else [root]:
            if p.is_file():
                data = p.read_bytes()
                hits += [f"{name} in {p}" for name, v in PLANTED.items() if v.encode() in data]
    return hits


def group_left(pgid: int) -> list[int]:
    """Live processes of a process group (a killed worker must leave none)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(stat.parent.name))
    return pids


# ------------------------------------------------------------------ the worker


def worker(
    results: Path,
    log: Path,
    env: dict[str, str],
    *,
    kill: tuple[str, float, int] | None = None,
    preexec: Callable[[], None] | None = None,
    timeout: float = 300,
) -> tuple[int, list[int], float]:
    """The batch in a process of its own group; kill = (experiment, seconds after its start,
    signal). Returns the exit status, the group's processes still alive after it ended, and the
    seconds from its last experiment's end to its exit."""
    with open(log, "ab") as err:
        err.write(b"\n== worker\n")
        err.flush()  # before the worker writes to the same file
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(results), ",".join(EXPERIMENTS)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
            start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip
        assert proc.stdout is not None
        ended = math.inf
        try:
            for line in proc.stdout:
                if line.split() == ["done", EXPERIMENTS[-1]]:
                    ended = time.monotonic()
                if kill and line.split() == ["start", kill[0]]:
                    time.sleep(kill[1])
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, kill[2])
                    break
            proc.stdout.read()
            rc = proc.wait(timeout=timeout)
            exit_wait = time.monotonic() - ended
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    time.sleep(0.2)
    alive = group_left(proc.pid)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return rc, alive, exit_wait


def reference_run(results: Path, log: Path) -> tuple[dict[str, list], dict[str, float]]:
    """The uninterrupted batch (in a worker, timed per experiment): rows and durations."""
    env = base_env()
    times: dict[str, float] = {}
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(results), ",".join(EXPERIMENTS)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=open(log, "ab"), text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        word, _, name = line.strip().partition(" ")
        if word not in ("start", "done") or name not in CALLS:
            continue  # the experiments' own lines
        times[name] = time.monotonic() - times[name] if word == "done" else time.monotonic()
    if proc.wait() != 0:
        raise SystemExit(f"the uninterrupted smoke batch failed: see {log}")
    return {n: deterministic(results / PROFILE / n) for n in EXPERIMENTS}, times


# ------------------------------------------------------------------ the faults


def damage_bytes(path: Path, rng: random.Random) -> str:
    """Tear, NUL-fill or put a non-UTF-8 byte into a file; says which."""
    data = path.read_bytes()
    at = rng.randrange(max(len(data), 1))
    mode = rng.choice(("torn", "nul", "non-utf8"))
    if mode == "torn":
        path.write_bytes(data[:at])
    elif mode == "nul":
        n = rng.randint(1, 64)
        path.write_bytes(data[:at] + b"\0" * n + data[at + n :])
    else:
        path.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    return f"{mode} {path.name} at byte {at} of {len(data)}"


def kill_fault(results, log, reference, times, rng, sig) -> Outcome:
    """Kill the batch at a random point of a random experiment, maybe damage its checkpoint."""
    start = rng.randrange(len(EXPERIMENTS))
    exp = EXPERIMENTS[start]
    after = rng.uniform(0, times[exp])
    env = base_env()
    if rng.random() < 0.3:
        env["FORCE"] = "1"
        how = "FORCE=1"
    else:
        for name in EXPERIMENTS[start:]:
            shutil.rmtree(results / PROFILE / name, ignore_errors=True)
        how = "removed from it on"
    rc, alive, _ = worker(results, log, env, kill=(exp, after, sig))
    ended = ": the batch had ended, nothing killed" if rc == 0 else ""
    out = Outcome(f"{signal.Signals(sig).name} {after:.2f} s into {exp} ({how}, exit {rc}{ended})")
    out.problems += [f"process {p} of the killed batch was left running" for p in alive]
    out.problems += half_written(results)
    partial = sorted((results / PROFILE).glob(".*.partial-*.jsonl"))
    if partial and rng.random() < 0.5:
        out.note = "; then " + damage_bytes(rng.choice(partial), rng)
    return out


def damage_fault(results, log, reference, times, rng) -> Outcome:
    """Damage one file of one published result."""
    exp = rng.choice(EXPERIMENTS)
    what = damage_bytes(results / PROFILE / exp / rng.choice(RESULT_FILES), rng)
    return Outcome(f"{what} of {exp}")


@contextlib.contextmanager
def tmpfs(where: Path) -> Iterator[bool]:
    """A tmpfs mounted at where (as root, where mounts are allowed); yields whether it is."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)], capture_output=True
    ).returncode == 0  # fmt: skip
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], check=False)


def used_bytes(where: Path) -> int:
    """Bytes in use on the file system at where."""
    st = os.statvfs(where)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def disk_fault(results, log, reference, times, rng) -> Outcome:
    """The batch from a random experiment on, on a disk that fills a little later (a tmpfs
    resized to what is used plus a few KiB; a file-size limit where nothing can be mounted)."""
    start = rng.randrange(len(EXPERIMENTS))
    room = rng.randint(8, 400) * 1024
    disk = results.parent / "disk"
    with tmpfs(disk) as mounted:
        target = disk / "results"
        shutil.copytree(results.parent / "reference", target)
        for name in EXPERIMENTS[start:]:
            shutil.rmtree(target / PROFILE / name)
        if mounted:
            size = used_bytes(disk) + room
            subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)

        def limit() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

        rc, alive, _ = worker(target, log, base_env(), preexec=None if mounted else limit)
        how = "tmpfs" if mounted else "file-size limit"
        said = log.read_text(errors="replace").rsplit("\n== worker\n", 1)[-1].strip()
        last = said.splitlines()[-1] if said else ""
        out = Outcome(f"disk full {room // 1024} KiB after {EXPERIMENTS[start]} starts ({how}, "
                      f"exit {rc}: {last[:160]!r})")  # fmt: skip
        out.problems += [f"process {p} left running" for p in alive]
        out.problems += half_written(target)
        if mounted:
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        rerun(target, log)
        out.problems += differences(target, reference) + leftovers(target) + unreadable(target)
        out.problems += secrets_in(target)
        shutil.rmtree(target, ignore_errors=True)
    return out


def wandb_fault(results, log, reference, times, rng) -> Outcome:
    """The batch with a W&B key and a server that accepts connections and never answers."""
    exp = rng.choice(EXPERIMENTS)
    shutil.rmtree(results / PROFILE / exp, ignore_errors=True)
    env = {k: v for k, v in base_env().items() if k != "WANDB_MODE"}
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        env.update(
            WANDB_BASE_URL=f"http://127.0.0.1:{srv.getsockname()[1]}",
            WANDB_INIT_TIMEOUT="2",
            WANDB_DIR=str(results / "wandb"),
            WANDB_SILENT="true",
        )
        (results / "wandb").mkdir(exist_ok=True)
        t0 = time.monotonic()
        rc, alive, exit_wait = worker(results, log, env, timeout=240)
        took = time.monotonic() - t0
    out = Outcome(f"W&B unreachable while {exp} is recomputed (exit {rc}, {took:.0f} s, "
                  f"{exit_wait:.0f} s of it after the last experiment)")  # fmt: skip
    if rc != 0:
        out.problems.append(f"the batch failed without W&B (exit {rc}): see {log}")
    elif exit_wait > EXIT_WAIT_S:
        out.problems.append(f"the process waited {exit_wait:.0f} s for W&B to let it exit")
    out.problems += [f"process {p} left running" for p in alive]
    return out


def import_fault(results, log, reference, times, rng) -> Outcome:
    """Kill an import of the reference results' bundle over the results at a random point."""
    from specdec_study.results.bundle import write_bundle

    zipped = write_bundle(results.parent / "reference" / PROFILE, results.parent / "bundle.zip")
    cmd = [sys.executable, "-m", "specdec_lib", "import-bundle", str(zipped), "--replace"]
    env = {**base_env(), "SPECDEC_RESULTS": str(results)}
    t0 = time.monotonic()
    whole = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    full = time.monotonic() - t0
    if whole.returncode:
        return Outcome("import-bundle --replace", [f"an import failed: {whole.stderr.strip()}"])
    after, sig = rng.uniform(0, full), rng.choice([signal.SIGKILL, signal.SIGINT])
    with open(log, "a", encoding="utf-8") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=f, start_new_session=True)
        time.sleep(after)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        rc = proc.wait(timeout=120)
    name = signal.Signals(sig).name
    out = Outcome(f"import-bundle --replace, {name} {after:.2f} of {full:.2f} s in (exit {rc})")
    gone = [e for e in EXPERIMENTS if not (results / PROFILE / e).is_dir()]
    out.problems += [f"{e} is gone after the killed import" for e in gone]
    out.problems += half_written(results)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if again.returncode:
        out.problems.append(f"the import after the kill failed: {again.stderr.strip()}")
    return out


FAULTS = {
    "sigkill": lambda *a: kill_fault(*a, signal.SIGKILL),
    "sigterm": lambda *a: kill_fault(*a, signal.SIGTERM),
    "damage": damage_fault,
    "disk": disk_fault,
    "wandb": wandb_fault,
    "import": import_fault,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--faults", type=int, default=len(KINDS), help="how many faults")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default=",".join(KINDS), help="which kinds, in turn")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    if args.faults < 1 or not set(kinds) <= set(KINDS):
        ap.error(f"--faults must be >= 1 and --kinds among {', '.join(KINDS)}")
    os.environ.update(base_env())
    t0 = time.monotonic()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="specdec-faults-") as tmp:
        work = Path(tmp)
        results, log = work / "results", work / "batch.log"
        reference, times = reference_run(work / "reference", log)
        shutil.copytree(work / "reference", results)
        print(f"== reference batch: {', '.join(f'{n} {t:.1f} s' for n, t in times.items())}")
        for i in range(args.faults):
            kind = kinds[i % len(kinds)]
            rng = random.Random(f"{args.seed}-{i}")
            t1 = time.monotonic()
            out = FAULTS[kind](results, log, reference, times, rng)
            if kind != "disk":
                rerun(results, log)
                out.problems += differences(results, reference) + leftovers(results)
                out.problems += unreadable(results)
            out.problems += secrets_in(results, log)
            failed += bool(out.problems)
            status = "FAILED: " + "; ".join(out.problems) if out.problems else "ok"
            took = time.monotonic() - t1
            print(f"fault {i} ({kind}, {took:.0f} s): {out.what}{out.note}: {status}", flush=True)
    took = time.monotonic() - t0
    print(
        f"== {args.faults - failed} of {args.faults} faults held (seed {args.seed}, {took:.0f} s)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
