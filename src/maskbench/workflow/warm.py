"""The warm runner: a local DAG's jobs fork from one process that has imported torch and transformers once.

Importing torch and transformers costs about 9 s per process on the 2-core CPU machine (transformers pulls in
torch.distributed and torch._dynamo), and a job's own work is often under a second. So a local `snakemake` run
starts one server (`onstart` in rules/lifecycle.smk) that imports them, and every `python -m maskbench.steps <step>`
job hands itself to the server from the launcher (`maskbench/steps/__main__.py`), before anything heavy is imported: the
job's process sends its arguments, working directory, environment and its stdin/stdout/stderr (the rule's log)
over a Unix socket and waits; the server forks a worker, which forks the job, waits for it and sends back its exit
code. Runs of fewer than MIN_JOBS shell jobs start no server. The job runs the same code on the same inputs as a process of its own would: its environment, working
directory, argv and torch thread count are the job's (snakemake's OMP_NUM_THREADS), and the global random
generators are reset to a fresh process's state. If the job's process dies (snakemake cancels it, Ctrl-C), the
worker kills the job's process group.

On a cluster, a group job (several jobs in one submission, profiles/slurm `groups:`) is one
`snakemake --mode remote --target-jobs ...` on the job's node, which starts each job there (through `srun` on SLURM):
that process starts a server when it parses the Snakefile (`jobs_run_here`; cluster jobs run no `onstart`), its jobs
find it through the environment they inherit, and the server ends with the process.

Off when: `MASKBENCH_WARM=0`, the run is not local (a SLURM job never forks from a server on the submit host),
torch is a CUDA build (the CUDA driver is not fork-safe; the server then exits and every job runs on its own), or no
server answers (the job then runs in its own process, as before). The server exits when snakemake does.
Snakemake's benchmark files keep the job's wall time; their memory and CPU columns then measure the waiting process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from maskbench.workflow.step_timing import process_started

SOCKET_ENV = "MASKBENCH_WARM_SOCKET"
SOCKET_NAME = "socket"
SWITCH_ENV = "MASKBENCH_WARM"
LAUNCHER = "maskbench.steps"
STEP_PREFIX = LAUNCHER + "."
# imported once by the server, with every maskbench library module (not the steps); a module that fails to import
# is skipped (a job that needs it imports it itself, and fails there with its own message)
PRELOAD = ("numpy", "pandas", "torch", "safetensors.torch", "transformers", "transformers.models.bert.modeling_bert",
           "transformers.models.bert.tokenization_bert", "datasets", "matplotlib", "matplotlib.pyplot",
           "sklearn.linear_model")
READY_TIMEOUT_S = 120.0
# a server costs about one job's imports (~10 s here): for fewer shell jobs than this, each job imports its own
MIN_JOBS = 4
# in a job run by the warm runner: when the job's own (handing-over) process started, for its timing line
JOB_STARTED: float | None = None
_HEADER = struct.Struct("!I")
_CODE = struct.Struct("!i")
_KILL_GRACE_S = 10.0


# -- the job's side ----------------------------------------------------------------------------------------------

def delegate_if_warm(module: str, args: list[str]) -> None:
    """Run step `module` (maskbench.steps.<track>.<step>) with `args` in the warm server and exit with its code, when
    a server is listening; otherwise return (the caller then runs it in this process). Interpreter options on the
    command line (`python -X importtime -m ...`) mean the caller wants a process of its own."""
    path = os.environ.get(SOCKET_ENV)
    if not path or os.environ.get(SWITCH_ENV) == "0" or _has_interpreter_options(getattr(sys, "orig_argv", [])):
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return  # no server (not started yet, or gone): run here
    body = json.dumps({"module": module, "argv": args, "cwd": os.getcwd(), "env": dict(os.environ),
                       "started": process_started() or time.time()}).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    socket.send_fds(conn, [_HEADER.pack(len(body))], [0, 1, 2])
    conn.sendall(body)
    reply = _recv_exactly(conn, _CODE.size)
    if reply is None:
        print(f"maskbench.workflow.warm: the warm server at {path} closed the connection before {module} finished",
              file=sys.stderr)
        os._exit(1)
    os._exit(_CODE.unpack(reply)[0])


def _has_interpreter_options(orig_argv: list[str]) -> bool:
    """Anything but `python -m maskbench.steps ...`: e.g. `python -X importtime -m maskbench.steps ...`."""
    return orig_argv[1:3] != ["-m", LAUNCHER]


def _recv_exactly(conn: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def jobs_run_here(argv: list[str], environ=os.environ) -> int:
    """How many jobs a cluster job's snakemake runs on this node: the process a cluster job starts has
    `--mode remote` and `--target-jobs J1 J2 ...` (a group job names several; the SLURM plugin's job-step executor
    then starts each through `srun` inside the same allocation, with this process's environment). 0 for any other
    command line (the submitting snakemake starts its server in `onstart`) and when a server of an enclosing process
    already serves this one (its socket is in the environment)."""
    args = list(argv)
    mode = None
    for i, arg in enumerate(args):
        if arg.startswith("--mode="):
            mode = arg.split("=", 1)[1]
        elif arg == "--mode" and i + 1 < len(args):
            mode = args[i + 1]
    if mode != "remote" or "--target-jobs" not in args or environ.get(SOCKET_ENV):
        return 0
    jobs = 0
    for arg in args[args.index("--target-jobs") + 1:]:
        if arg.startswith("-"):
            break
        jobs += 1
    return jobs


# -- the server's side -------------------------------------------------------------------------------------------

def serve(path: str, parent_pid: int, preload: tuple[str, ...] = PRELOAD, library: bool = True) -> None:
    """Import `preload` (and every maskbench library module with `library`), listen on `path` and fork a worker
    per job until the parent process is gone."""
    import importlib

    for name in (*preload, *(_library_modules() if library else ())):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a job that needs it imports it itself
            continue
        torch = sys.modules.get("torch")
        if torch is not None and torch.version.cuda is not None:
            return  # a CUDA build: forking after the driver may have been touched is unsafe; jobs run on their own
    fresh = _fresh_process_state()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".binding")
    listener.listen(64)
    os.rename(path + ".binding", path)  # the path appears only once the server listens
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while _alive(parent_pid):
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            if os.fork() == 0:
                code = 1
                try:
                    listener.close()
                    _worker(conn, fresh)
                    code = 0
                finally:
                    os._exit(code)  # never back into this loop
            conn.close()
    finally:
        listener.close()
        Path(path).unlink(missing_ok=True)


def _library_modules() -> list[str]:
    import pkgutil

    # the package's folder (this module's folder's parent), not `import maskbench`: the root's lazy public API
    # reaches most of the library
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [m.name for m in pkgutil.walk_packages([package], "maskbench.")
            if not m.name.startswith(("maskbench.steps", "maskbench.tools", "maskbench.benchmarks",
                                      "maskbench.workflow.warm"))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fresh_process_state() -> dict:
    """What a new `python` process would start with, read before any job runs."""
    torch = sys.modules.get("torch")
    return {"torch_threads": torch.get_num_threads() if torch else None,
            "torch_seed": torch.initial_seed() if torch else None}


def _worker(conn: socket.socket, fresh: dict) -> None:
    """One job: receive it, fork it, wait for it (or kill it when its process goes away), send its exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    if len(header) != _HEADER.size or len(fds) != 3:
        return
    body = _recv_exactly(conn, _HEADER.unpack(header)[0])
    if body is None:
        return
    request = json.loads(body)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_job(request, fds, fresh)
    try:
        os.setpgid(pid, pid)  # here as well as in the job: its group exists before either goes on
    except OSError:
        pass  # the job already did it, or has exited
    for fd in fds:
        os.close(fd)
    conn.setblocking(False)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            conn.setblocking(True)
            code = os.waitstatus_to_exitcode(status)
            conn.sendall(_CODE.pack(code if code >= 0 else 128 - code))  # killed by a signal: as a shell says
            return
        try:
            if conn.recv(1) == b"":
                _kill(pid)  # the job's process is gone: so is the job
                return
        except BlockingIOError:
            pass
        time.sleep(0.05)


def _signal_group(pid: int, signum: int) -> None:
    for send in (os.killpg, os.kill):  # the job's process group (what it started), and the job itself
        try:
            send(pid, signum)
        except ProcessLookupError:
            pass


def _kill(pid: int) -> None:
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + _KILL_GRACE_S
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return
        time.sleep(0.05)
    _signal_group(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _run_job(request: dict, fds: list[int], fresh: dict) -> None:
    """In the forked job: become the job's process (fds, cwd, environment, argv, threads, seeds), run the step."""
    import random
    import runpy

    code = 1
    try:
        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _reset_random_state(fresh, random)
        global JOB_STARTED
        JOB_STARTED = request["started"]
        sys.argv = ["-m", *request["argv"]]
        sys.orig_argv = [sys.executable, "-m", request["module"], *request["argv"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the job's traceback goes to its log, as in a process of its own
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        import logging

        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _reset_random_state(fresh: dict, random_module) -> None:
    """Global generators as a new process has them: Python's and numpy's from the OS, torch's default seed, and
    the thread count snakemake gives the job (OMP_NUM_THREADS, read by a new process when torch loads) — for
    torch and for the BLAS and OpenMP libraries numpy, scipy and scikit-learn loaded in the server."""
    random_module.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(fresh["torch_seed"])
        threads = _thread_count(os.environ, "OMP_NUM_THREADS")
        torch.set_num_threads(threads or fresh["torch_threads"])
    _limit_native_threads(os.environ)


def _thread_count(environ, *names: str) -> int | None:
    """The first of ``names`` set to a positive integer in ``environ``."""
    for name in names:
        value = environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def native_thread_limits(environ) -> dict[str, int]:
    """The thread counts a new process's BLAS and OpenMP runtimes would take from ``environ`` when they load
    (OpenBLAS and MKL read their own variable first, then OMP_NUM_THREADS); empty where nothing is set."""
    limits = {}
    blas = _thread_count(environ, "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
    openmp = _thread_count(environ, "OMP_NUM_THREADS")
    if blas:
        limits["blas"] = blas
    if openmp:
        limits["openmp"] = openmp
    return limits


def _limit_native_threads(environ) -> None:
    """Set the thread pools the server's BLAS and OpenMP libraries were created with (at the server's import,
    from its own environment) to what the job's environment gives a new process: with more threads, BLAS sums in
    another order and, e.g., a logistic regression's probabilities move in the fifth decimal."""
    limits = native_thread_limits(environ)
    if not limits:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # no scikit-learn (which brings it) in this environment: nothing of its kind loaded
        return
    threadpool_limits(limits=limits)


# -- starting and stopping it from the Snakefile ------------------------------------------------------------------

class Server:
    """A server process for one snakemake run; `start` returns None when the warm runner is off."""

    def __init__(self, process, folder: Path):
        self.process = process
        self.folder = folder

    @property
    def socket_path(self) -> str:
        return str(self.folder / SOCKET_NAME)

    @classmethod
    def start(cls, local: bool, jobs: int) -> Server | None:
        """A server for a local run of `jobs` shell jobs (none for fewer than MIN_JOBS: it would cost more than
        it saves), listening before this returns; None when off or when it did not come up."""
        import shutil
        import subprocess
        import tempfile

        python = shutil.which("python")
        if not local or jobs < MIN_JOBS or os.environ.get(SWITCH_ENV) == "0" or python is None:
            return None
        # a short path: Unix socket paths are limited to about 100 bytes
        folder = Path(tempfile.mkdtemp(prefix="mbwarm-", dir="/tmp" if os.path.isdir("/tmp") else None))
        with open(folder / "server.log", "w") as log:  # the server keeps its own copy of the descriptor
            process = subprocess.Popen(
                [python, "-m", "maskbench.workflow.warm", str(folder / SOCKET_NAME), str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        server = cls(process, folder)
        # wait for it to listen (about 10 s here): jobs started meanwhile would import everything themselves, on
        # the cores the server needs
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not os.path.exists(server.socket_path) and server.process.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        if not os.path.exists(server.socket_path):
            server.stop()
            return None
        os.environ[SOCKET_ENV] = server.socket_path
        return server

    def stop(self) -> None:
        os.environ.pop(SOCKET_ENV, None)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except Exception:  # noqa: BLE001
                self.process.kill()
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def _main(argv: list[str]) -> None:
    """`python -m maskbench.workflow.warm SOCKET PARENT_PID [--only MODULE ...]` (--only: import just these, for tests)."""
    if len(argv) < 2 or (len(argv) > 2 and argv[2] != "--only"):
        raise SystemExit("usage: python -m maskbench.workflow.warm SOCKET PARENT_PID [--only MODULE ...]")
    if len(argv) > 2:
        serve(argv[0], int(argv[1]), tuple(argv[3:]), library=False)
    else:
        serve(argv[0], int(argv[1]))


if __name__ == "__main__":
    # run as the imported module, not as __main__: the forked job reads maskbench.workflow.warm.JOB_STARTED
    from maskbench.workflow.warm import _main as main_of_the_module

    main_of_the_module(sys.argv[1:])
