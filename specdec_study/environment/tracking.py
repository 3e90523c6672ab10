"""Environment capture and W&B logging that never blocks, prompts or leaks a secret.

W&B runs offline unless WANDB_API_KEY is set (and WANDB_MODE is not "offline"), and not at all
with WANDB_MODE=disabled or when wandb is not installed. An online start is bounded
(`INIT_TIMEOUT_S`, or $WANDB_INIT_TIMEOUT): when the server does not answer in time (no network)
the run falls back to offline, said once, and the process's later runs start offline. Closing a
run is bounded too (`FINISH_TIMEOUT_S`, or $WANDB_FINISH_TIMEOUT). Config
values are scrubbed of anything that looks like a token (`secrets.scrub`) before they reach W&B
or a file. Knows nothing about decoding.

What one experiment's run holds: a group per batch (SPECDEC_BATCH, else profile@commit), the
experiment as job type, tags (profile, dtype, device); one history series per arm and cell under
`arms/<cell>/<method>/<metric>` (x-axis `prompt`), kept out of the summary; at the end the
per-prompt rows as a `wandb.Table`, the figures as images, the result directory as an artifact
(type `result`), and the headline numbers as the only summary values besides W&B's own.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from specdec_lib import ROOT
from specdec_study.environment.secrets import scrub


def git_commit(root: Path | None = None) -> str | None:
    """The checked-out commit's hash, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root or Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def git_modified(
    root: Path | None = None, under: tuple[str, ...] = ("specdec_lib", "specdec_study")
) -> list[str] | None:
    """The files under `under` (the measuring code: the library and the study) that differ from
    the checked-out commit, changed or new and not ignored, sorted ([]: the commit is the code
    that ran), or None outside a git checkout."""
    root = root or ROOT
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *under],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode:
        return None
    return sorted(line[3:] for line in out.stdout.splitlines() if len(line) > 3)


def environment(device: str | None = None, dtype: str | None = None) -> dict[str, Any]:
    """Versions, hardware and the commit: written beside every result."""
    import torch
    import transformers

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "device": device,
        "dtype": dtype,
        "git_commit": git_commit(),
        "git_modified": git_modified(),  # measuring code not in git_commit when it ran
    }
    env.update(precision_facts(device))
    env["numpy"] = _version("numpy")
    env["os"] = os_name()
    if cpu := cpu_model():
        env["cpu_model"] = cpu
    return env


def memory_peaks(device: str | None) -> dict[str, float | None]:
    """This process's peaks so far, in MiB: host resident memory (`getrusage`; the model load
    dominates it) and, on CUDA, the GPU memory torch allocated; `None` where not measurable."""
    import resource

    import torch

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    rss_mib = rss / 2**20 if sys.platform == "darwin" else rss / 2**10
    gpu = None
    if device and device.startswith("cuda") and torch.cuda.is_available():
        gpu = round(torch.cuda.max_memory_allocated(torch.device(device)) / 2**20, 1)
    return {"peak_host_rss_mib": round(rss_mib, 1), "peak_gpu_mib": gpu}


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def os_name() -> str:
    """'Debian GNU/Linux 12 (bookworm)' where os-release says so, else platform's system."""
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME") or platform.system()
    except OSError:
        return f"{platform.system()} {platform.release()}"


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (None elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def precision_facts(device: str | None) -> dict[str, Any]:
    """The GPU's compute capability and whether bfloat16 is native on `device` (a GPU from sm_80;
    a CPU with AVX512-BF16/AMX): a T4 runs bfloat16 emulated, and its timings say so."""
    import torch

    from specdec_lib.models.device import bf16_native

    facts: dict[str, Any] = {"gpu_capability": None, "bf16_native": None}
    if not device:
        return facts
    dev = torch.device(device)
    if dev.type == "cuda":
        facts["gpu_capability"] = ".".join(map(str, torch.cuda.get_device_capability(dev)))
    if dev.type in ("cuda", "cpu"):
        facts["bf16_native"] = bf16_native(dev)
    return facts


INIT_TIMEOUT_S = 15  # an online start that takes longer falls back to offline (WANDB_INIT_TIMEOUT)
FINISH_TIMEOUT_S = 60  # a finish (the upload) waited for at most this long (WANDB_FINISH_TIMEOUT)
_WENT_OFFLINE = False  # set once the server did not answer: later runs of this process go offline


def _no_answer(timeout: float) -> str | None:
    """Why the W&B server ($WANDB_BASE_URL, else api.wandb.ai) gave no HTTP answer within
    timeout seconds (None when it answered, whatever the status)."""
    import urllib.error
    import urllib.request

    url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None  # an answer: 401, 404 ... are the server speaking
    except (OSError, ValueError) as e:  # URLError, a timeout, a refused connection, a bad URL
        return type(getattr(e, "reason", e)).__name__


def _dotless(data: dict[str, Any]) -> dict[str, Any]:
    """W&B reads "." in a key as nesting (temperature=0.7 would split, and escape define_metric's
    globs): "0.7" becomes "0_7"."""
    return {k.replace(".", "_"): v for k, v in data.items()}


def _start_mode(timeout: float) -> str:
    """The mode a run starts in: online with a key and no WANDB_MODE=offline (CI sets it with
    a fake key) while the server answers within `timeout`, else offline; once the server has
    been silent, offline for the rest of the process (said once)."""
    global _WENT_OFFLINE
    online = os.environ.get("WANDB_API_KEY") and os.environ.get("WANDB_MODE") != "offline"
    if not online or _WENT_OFFLINE:
        return "offline"
    # asked first, outside wandb: an online start that wandb gives up on stays pending in its
    # service, which then holds the process's exit for tens of seconds
    silent = _no_answer(timeout)
    if silent is None:
        return "online"
    _WENT_OFFLINE = True
    os.environ["WANDB_MODE"] = "offline"  # wandb's own service too: it asks no server
    print(
        f"W&B: no answer from the server within {timeout:g} s ({silent}); "
        "logging offline from here on (`wandb sync` uploads later)",
        file=sys.stderr,
    )
    return "offline"


class Tracker:
    """A W&B run when wandb is usable, else a no-op. Offline without a key; never prompts."""

    def __init__(
        self,
        project: str,
        name: str,
        config: dict[str, Any],
        dir: Path | None = None,
        *,
        group: str | None = None,
        job_type: str | None = None,
        tags: list[str] | None = None,
    ):
        self.run = None
        if os.environ.get("WANDB_MODE") == "disabled":
            return
        try:
            import wandb
        except ImportError:
            return
        os.environ.setdefault("WANDB_SILENT", "true")
        os.environ.setdefault("WANDB_CONSOLE", "off")
        timeout = float(os.environ.get("WANDB_INIT_TIMEOUT") or INIT_TIMEOUT_S)
        mode = _start_mode(timeout)
        global _WENT_OFFLINE

        def init(mode: str):
            return wandb.init(
                project=project,
                name=name,
                group=group,
                job_type=job_type,
                tags=[t[:64] for t in scrub(tags or [])],
                config=scrub(config),
                mode=mode,
                dir=str(dir) if dir else None,
                reinit="finish_previous",
                settings=wandb.Settings(
                    silent=True, console="off", x_disable_stats=True, init_timeout=timeout
                ),
            )

        try:
            try:
                self.run = init(mode)
            except Exception as e:  # noqa: BLE001 - e.g. CommError: no network
                if mode != "online":
                    raise
                _WENT_OFFLINE = True
                print(
                    f"W&B: no answer from the server within {timeout:g} s ({type(e).__name__}); "
                    "logging offline from here on (`wandb sync` uploads later)",
                    file=sys.stderr,
                )
                self.run = init("offline")
        except Exception as e:  # noqa: BLE001 - tracking must never stop a run
            print(f"W&B disabled for this run: {type(e).__name__}", file=sys.stderr)
            self.run = None
            return
        # per-prompt series and media are for the charts; the summary keeps the headline only
        for prefix in ("arms", "per_prompt", "figures"):
            self.run.define_metric(f"{prefix}/*", step_metric="prompt", summary="none")
        self.run.define_metric("prompt", summary="none")

    def log_row(self, row: dict[str, Any]) -> None:
        """One per-prompt row as points of its arm's own series (never one mixed series)."""
        if self.run is None:
            return
        cell = "/".join(
            f"{c}={row[c]}" for c in ("context", "temperature") if row.get(c) not in (None, "")
        )
        arm = f"arms/{cell + '/' if cell else ''}{row.get('method') or row.get('draft') or 'run'}"
        skip = {"prompt", "article", "anchor", "k", "context", "temperature"}
        data = {
            f"{arm}/{k}": v
            for k, v in row.items()
            if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        data["prompt"] = row.get("prompt", 0)
        self.run.log(scrub(_dotless(data)))

    def publish(self, result_dir: Path, artifact: str, headline: dict[str, Any]) -> None:
        """At the end: rows as a table, figures as images, the directory as an artifact, and the
        headline numbers as the summary."""
        if self.run is None:
            return
        import wandb

        try:
            import pandas as pd

            rows = pd.read_csv(result_dir / "per_prompt.csv")
            drop = [c for c in ("tokens", "accepted_lengths", "proposed_lengths") if c in rows]
            rows = rows.drop(columns=drop)
            media: dict[str, Any] = {"per_prompt/rows": wandb.Table(dataframe=rows)}
            for png in sorted(result_dir.glob("figures/*.png")):
                media[f"figures/{png.stem}"] = wandb.Image(str(png), caption=png.stem)
            self.run.log(media)
            art = wandb.Artifact(re.sub(r"[^A-Za-z0-9._-]", "-", artifact), type="result")
            art.add_dir(str(result_dir))
            self.run.log_artifact(art)
        except Exception as e:  # noqa: BLE001 - tracking must never stop a run
            print(f"W&B: result files not logged ({type(e).__name__})", file=sys.stderr)
        self.summary(_dotless(headline))

    def log(self, data: dict[str, Any]) -> None:
        """Log a dict of metrics to the run (scrubbed), if tracking is on."""
        if self.run is not None:
            self.run.log(scrub(data))

    def summary(self, data: dict[str, Any]) -> None:
        """Set the run's summary values (scrubbed), if tracking is on."""
        if self.run is not None:
            for k, v in scrub(data).items():
                self.run.summary[k] = v

    def finish(self) -> None:
        """Close the run, if one is open, waiting at most `FINISH_TIMEOUT_S` (or
        $WANDB_FINISH_TIMEOUT) for it: on a flaky network the upload goes on in the background
        (or `wandb sync` does it later) and the experiment moves on, said in one line. An error
        while closing is said, never raised. Later calls do nothing."""
        if self.run is None:
            return
        run, self.run = self.run, None
        timeout = float(os.environ.get("WANDB_FINISH_TIMEOUT") or FINISH_TIMEOUT_S)
        failed: list[BaseException] = []

        def close() -> None:
            try:
                run.finish()
            except Exception as e:  # noqa: BLE001 - tracking must never stop a run
                failed.append(e)

        closer = threading.Thread(target=close, name="wandb-finish", daemon=True)
        closer.start()
        closer.join(timeout)
        where = getattr(run, "dir", None) or "the W&B folder"
        if closer.is_alive():
            print(
                f"W&B: the run did not finish within {timeout:g} s; moving on (its files are in "
                f"{where}; `wandb sync` uploads them later)",
                file=sys.stderr,
            )
        elif failed:
            print(f"W&B: finishing the run failed ({type(failed[0]).__name__})", file=sys.stderr)
