"""The warm runner (maskbench/workflow/warm.py): a step handed to a server runs as it would in a process of its own."""

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from maskbench.workflow import warm
from maskbench.workflow.step_timing import read_timing


def test_only_the_launcher_without_interpreter_options_hands_over():
    assert not warm._has_interpreter_options(["python", "-m", "maskbench.steps", "nlu.table1", "--rows", "x"])
    assert warm._has_interpreter_options(["python", "-X", "importtime", "-m", "maskbench.steps", "nlu.table1"])
    assert warm._has_interpreter_options(["python", "-m", "maskbench.steps.nlu.table1"])
    assert warm._has_interpreter_options(["python", "-m", "maskbench.workflow.warm", "sock", "1"])
    assert warm._has_interpreter_options(["python", "script.py"])
    assert warm._has_interpreter_options(["python"])


def test_the_launcher_names_a_step_that_does_not_exist(tmp_path):
    done = subprocess.run([sys.executable, "-m", "maskbench.steps", "nlu.no_such_step"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no step 'nlu.no_such_step'" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "maskbench.steps"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("usage: python -m maskbench.steps <track>.<step>")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server that preloads nothing but pandas (a job imports the rest itself), child of this test process."""
    folder = tmp_path_factory.mktemp("warm")
    path = str(folder / "socket")
    process = subprocess.Popen([sys.executable, "-m", "maskbench.workflow.warm", path, str(os.getpid()), "--only", "pandas"])
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert process.poll() is None and time.monotonic() < deadline, "the warm server did not come up"
        time.sleep(0.05)
    yield path
    process.terminate()
    process.wait(timeout=10)
    assert not os.path.exists(path)  # it removes its socket


def step(args, cwd, socket_path=None, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != warm.SOCKET_ENV}
    if socket_path:
        env[warm.SOCKET_ENV] = socket_path
    return subprocess.Popen([sys.executable, "-m", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def table1_args(folder):
    evals = []
    for row, score in (("baseline", 0.5), ("md", 0.75)):
        path = folder / f"{row}.json"
        path.write_text(json.dumps({"row": row, "task": "mnli", "seed": 1, "eval_set": "mnli_dev",
                                    "metrics": {"accuracy": score}}))
        evals.append(path.name)
    return ["maskbench.steps", "nlu.table1", "--evals", *evals, "--rows", '["baseline", "md"]', "--columns",
            '{"acc": {"task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy"}}',
            "--out-csv", "out/t.csv", "--out-md", "out/t.md", "--out-tex", "out/t.tex"]


def test_a_handed_over_step_writes_what_a_process_of_its_own_writes(server, tmp_path):
    cold, hot = tmp_path / "cold", tmp_path / "warm"
    for folder, socket_path in ((cold, None), (hot, server)):
        folder.mkdir()
        done = step(table1_args(folder), folder, socket_path)
        out, err = done.communicate(timeout=120)
        assert done.returncode == 0, err
        timing = read_timing(err)
        assert timing["step"] == "table1" and timing["warm"] is (socket_path is not None)
    for name in ("t.csv", "t.md", "t.tex"):  # relative paths: the job ran in its own working directory
        assert (hot / "out" / name).read_bytes() == (cold / "out" / name).read_bytes()


def test_a_handed_over_step_keeps_its_exit_code_stdout_and_stderr(server, tmp_path):
    done = step(["maskbench.steps", "nlu.table1", "--rows", "[]"], tmp_path, server)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "error: the following arguments are required: --evals" in err
    done = step(["maskbench.steps", "nlu.table1", "--help"], tmp_path, server)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0 and "usage: python -m maskbench.steps nlu.table1" in out


def test_no_server_means_the_step_runs_in_its_own_process(tmp_path):
    done = step(table1_args(tmp_path), tmp_path, str(tmp_path / "nobody-listens"))
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert read_timing(err)["warm"] is False and (tmp_path / "out/t.csv").exists()


def command_line(process: psutil.Process) -> list[str]:
    """The process's command line, or none for one that has exited (a zombie not yet reaped has none to read)."""
    try:
        return process.cmdline()
    except psutil.NoSuchProcess:
        return []


def forked_jobs(serving: psutil.Process) -> list[psutil.Process]:
    """The server's grandchildren (worker -> job); a process that exits while they are listed (a worker gone, a zombie
    not yet reaped: psutil.ZombieProcess, seen in CI) is passed over."""
    jobs = []
    for worker in serving.children(recursive=True):
        try:
            jobs += worker.children()
        except psutil.NoSuchProcess:
            continue
    return jobs


def test_killing_the_jobs_process_kills_the_job(server, tmp_path):
    """snakemake cancels a job by killing its process: the forked job must go with it and write nothing."""
    args = ["maskbench.steps", "nlu.mask_benchmark", "--out", "bench.json", "--step-repeats", "100000",
            "--step-hidden", "32", "--step-layers", "1", "--step-heads", "2", "--step-intermediate", "64",
            "--step-vocab", "100", "--step-batch", "2", "--step-seq", "8"]
    client = step(args, tmp_path, server)
    serving = next(p for p in psutil.Process().children() if server in " ".join(command_line(p)))
    deadline = time.monotonic() + 60
    while not (jobs := forked_jobs(serving)):  # worker -> job
        assert time.monotonic() < deadline and client.poll() is None, client.communicate()
        time.sleep(0.1)
    job = jobs[0]
    client.kill()
    client.wait(timeout=10)
    job.wait(timeout=30)  # raises if the job outlives its process by 30 s
    assert not (tmp_path / "bench.json").exists()


def test_the_job_starts_from_a_fresh_processs_threads_and_seeds(monkeypatch):
    torch = pytest.importorskip("torch")
    import random

    threads = torch.get_num_threads()
    fresh = {"torch_threads": threads, "torch_seed": torch.initial_seed()}
    try:
        torch.manual_seed(123)
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        warm._reset_random_state(fresh, random)
        assert torch.get_num_threads() == 1 and torch.initial_seed() == fresh["torch_seed"]
        monkeypatch.delenv("OMP_NUM_THREADS")
        warm._reset_random_state(fresh, random)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(threads)


def test_a_run_with_few_jobs_or_not_local_or_switched_off_starts_no_server(monkeypatch):
    assert warm.Server.start(local=False, jobs=100) is None
    assert warm.Server.start(local=True, jobs=warm.MIN_JOBS - 1) is None
    monkeypatch.setenv(warm.SWITCH_ENV, "0")
    assert warm.Server.start(local=True, jobs=100) is None


# a group job's snakemake as the SLURM plugin starts it (abridged from a real run), and the per-job snakemake its
# job-step executor then starts through srun
GROUP_JOB_ARGV = ["/venv/lib/python3.11/site-packages/snakemake/__main__.py", "--snakefile", "/repo/Snakefile",
                  "--target-jobs", "finetune_baseline:task=mnli,seed=1", "finetune_baseline:task=qqp,seed=1",
                  "finetune_baseline:task=fever,seed=2", "finetune_baseline:task=mnli,seed=2",
                  "finetune_baseline:task=qqp,seed=2", "--allowed-rules", "finetune_baseline", "--cores", "2",
                  "--force", "--no-hooks", "--executor", "slurm-jobstep", "--jobs", "1", "--mode", "remote"]
STEP_ARGV = ["/venv/lib/python3.11/site-packages/snakemake/__main__.py", "--snakefile", "/repo/Snakefile",
             "--target-jobs", "finetune_baseline:task=mnli,seed=1", "--allowed-rules", "finetune_baseline",
             "--cores", "all", "--force-use-threads", "--mode=remote"]


def test_a_group_jobs_snakemake_counts_the_jobs_it_starts_on_its_node():
    assert warm.jobs_run_here(GROUP_JOB_ARGV, environ={}) == 5
    assert warm.jobs_run_here(STEP_ARGV, environ={}) == 1
    # the submitting snakemake (no --mode remote) and a dry run on the command line start nothing here
    assert warm.jobs_run_here(["snakemake", "--profile", "profiles/slurm", "--target-jobs", "a:x=1", "b:x=1",
                               "c:x=1", "d:x=1"], environ={}) == 0
    assert warm.jobs_run_here(["snakemake", "--cores", "2"], environ={}) == 0
    # a job inside a process that already has a server uses that one
    assert warm.jobs_run_here(GROUP_JOB_ARGV, environ={warm.SOCKET_ENV: "/tmp/mbwarm-x/socket"}) == 0


def test_the_job_gets_the_blas_and_openmp_threads_a_new_process_would():
    """OMP_NUM_THREADS=1 (snakemake's `threads: 1`) must reach the BLAS pool numpy loaded in the server: with the
    server's 2 threads a logistic regression's probabilities moved in the fifth decimal."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401 - loads its BLAS

    assert warm.native_thread_limits({"OMP_NUM_THREADS": "1"}) == {"blas": 1, "openmp": 1}
    assert warm.native_thread_limits({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "1"}) == {"blas": 2,
                                                                                                "openmp": 1}
    assert warm.native_thread_limits({"OMP_NUM_THREADS": "0"}) == {} == warm.native_thread_limits({})
    before = {lib["filepath"]: lib["num_threads"] for lib in threadpoolctl.threadpool_info()}
    try:
        warm._limit_native_threads({"OMP_NUM_THREADS": "1"})
        blas = [lib for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]
        assert blas and all(lib["num_threads"] == 1 for lib in blas)
    finally:
        for lib in threadpoolctl.threadpool_info():
            threadpoolctl.threadpool_limits(limits={lib["prefix"]: before.get(lib["filepath"], lib["num_threads"])})
