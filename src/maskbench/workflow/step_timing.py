"""Each step's own timer: when its process started, when its work began and ended, written as one line of its log.

`python -m maskbench.steps.<step>` ends by writing to stderr (the rule's log)::

    maskbench timing: {"step": "finetune", "startup_s": 9.12, "work_s": 1.03, "warm": false, "peak_rss_mb": 812.4}

`startup_s` runs from the process's start (read from the kernel, so it includes the interpreter's own start) to the
first line of the step's `main()`, i.e. process start-up and imports; `work_s` is `main()` itself. Under the warm
runner the job's process is the small one that hands the step over, so `startup_s` runs from its start.
`peak_rss_mb` is the step process's peak resident memory (``getrusage``'s ``ru_maxrss``); under the warm runner the
forked job starts from the server's resident pages (torch and transformers imported, as a cold job's would be), so
it reads about what the same step run on its own would (the paper miniature's per-rule memory table reads it).
`maskbench.workflow.overhead` reads these lines back.
"""

from __future__ import annotations

import json
import os
import time

PREFIX = "maskbench timing: "


def process_started() -> float | None:
    """This process's start as a `time.time()` value (10 ms resolution), or None where /proc does not say."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22 of proc(5): start time in clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.time() - max(age, 0.0)


def peak_rss_mb() -> float | None:
    """This process's peak resident memory in MB (Linux reports ``ru_maxrss`` in KiB), or None without it."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def timing_line(step: str, started: float, work_started: float, work_ended: float, warm: bool,
                peak_rss: float | None = None) -> str:
    record = {"step": step, "startup_s": round(work_started - started, 3),
              "work_s": round(work_ended - work_started, 3), "warm": warm}
    if peak_rss is not None:
        record["peak_rss_mb"] = peak_rss
    return PREFIX + json.dumps(record)


def read_timing(text: str) -> dict | None:
    """The last timing line of a log's text, or None."""
    for line in reversed(text.splitlines()):
        if line.startswith(PREFIX):
            try:
                return json.loads(line[len(PREFIX):])
            except json.JSONDecodeError:
                return None
    return None
