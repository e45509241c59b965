"""Fixtures shared by test modules."""

import contextlib
import functools
import os
import threading

import background
import numpy  # noqa: F401 (see below)
import pytest

# numpy imported before any background thread starts: pytest.approx looks numpy up in sys.modules without importing
# it, and a background thread's import of it still under way made an approx in a unit test fail ("partially
# initialized module 'numpy' has no attribute 'isscalar'").

# Torch on one thread in every process of the session but the workflow's jobs (snakemake sets each job's
# OMP_NUM_THREADS to its threads; torch reads the variable when it loads): on 2 cores the unit tests, the background
# lane and the smoke run share the cores, and two OpenMP threads per process spin for a core that is busy. The whole
# suite on 2 cores (pytest's own time): 337 s, against 355-370 s in 4 runs with torch's default of a thread per core.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The smoke run, started in the background when the session's tests are collected (pytest_collection_modifyitems):
# it runs on both cores while the unit tests, one core's work, go first; the tests that read it go last.
SMOKE: dict = {}
SMOKE_NICE = 5


def make_deps_only_python(venv):
    """A Python with maskbench's dependencies but not maskbench itself, as in the per-rule environment of
    `--software-deployment-method conda` (envs/maskbench.yaml): a venv whose one .pth line names this interpreter's
    site-packages folders. A path line adds the folder only; the .pth files in it, the editable install of
    maskbench among them, are not read. (About 3 s.)"""
    import site
    import subprocess
    import sys
    from pathlib import Path

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                         capture_output=True, text=True).stdout.strip()
    Path(own, "maskbench_dependencies.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('maskbench') is None,"
                            " u.find_spec('torch') is not None)"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": ""}, check=True)
    assert probe.stdout.split() == ["True", "True"], f"not a dependencies-only Python: {probe.stdout}"
    return python


def _deps_only_python(factory):
    if "python" not in SMOKE:
        SMOKE["python"] = make_deps_only_python(factory.mktemp("deps-only") / "venv")
    return SMOKE["python"]


@pytest.fixture(scope="session")
def deps_only_python(tmp_path_factory):
    return _deps_only_python(tmp_path_factory)


def start_smoke_run(factory) -> None:
    """The smoke DAG run locally, in the background: `snakemake --cores 2` under a Python without maskbench
    installed (and no PYTHONPATH of ours): the rules reach the code through the PYTHONPATH the workflow sets
    (rules/setup.smk), as in a per-rule conda environment. Its output goes to a log beside its folder."""
    import subprocess

    from test_workflow import REPO, snakemake_command

    if "process" in SMOKE:  # started at the session's start already
        return
    python = _deps_only_python(factory)
    workdir = factory.mktemp("smoke")
    log = open(workdir.parent / f"{workdir.name}.log", "w+")  # noqa: SIM115 (read when the run ends)
    cmd, env = snakemake_command("--cores", "2", "--configfile", str(REPO / "configs/smoke.yaml"), workdir=workdir,
                                 python=python, env={"PYTHONPATH": ""})
    SMOKE.update(workdir=workdir, log=log,
                 process=subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=env))
    yield_to_the_smoke_run()


def yield_to_the_smoke_run() -> None:
    """Lower this thread's priority (Linux: and that of the threads and processes it starts from now on) below the
    smoke run's, started before: the run and the SLURM run after it are the session's longest chain, and the SLURM
    run waits on the cluster's status checks, so the unit tests and the lane should fill the cores around it rather
    than delay it. With it the smoke run ends about 40 s sooner (203 s against 245 s into the session) and the
    session took 332 s against 337 s: the SLURM run, waiting on status checks, still ends last."""
    if not SMOKE.get("yielded"):
        SMOKE["yielded"] = True
        with contextlib.suppress(OSError):
            os.nice(SMOKE_NICE)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The smoke DAG's local run, once per session (started in the background at collection, or here when it was
    not): tests/test_workflow.py checks its outputs and tests/test_slurm.py compares the SLURM run's outputs with
    it. About 3.5 minutes alone on 2 cores (259 jobs, forked from the warm runner); the limit only catches a hang."""
    import subprocess

    if "process" not in SMOKE:
        start_smoke_run(tmp_path_factory)
    try:
        code = SMOKE["process"].wait(timeout=1800)
    except subprocess.TimeoutExpired:
        SMOKE["process"].kill()
        raise
    SMOKE["log"].seek(0)
    assert code == 0, SMOKE["log"].read()[-5000:]
    if "slurm_copied" in SMOKE:  # the SLURM run, in the background, copies the folder first: the tests wait for that
        assert SMOKE["slurm_copied"].wait(timeout=1800), "the SLURM run did not copy the smoke run's folder"
    return SMOKE["workdir"]


def slurm_after_smoke(factory, every_rule: bool):
    """The SLURM run (tests/test_slurm.py), once the smoke run has ended well; it sets SMOKE["slurm_copied"] once it
    has read what it needs of the smoke run's folder (or has ended)."""
    from test_slurm import plan_slurm_smoke, run_slurm_smoke

    try:
        planned = plan_slurm_smoke(factory)  # meanwhile: it reads nothing of the smoke run
        SMOKE["process"].wait()
        if SMOKE["process"].returncode != 0:
            pytest.fail("the smoke run failed: no SLURM run on its outputs")
        return run_slurm_smoke(factory, SMOKE["workdir"], every_rule, SMOKE["slurm_copied"], planned)
    finally:
        SMOKE["slurm_copied"].set()


def pytest_sessionfinish(session, exitstatus):
    # a session that stopped early (-x, ^C) leaves no run behind
    import sys

    slurm = sys.modules.get("test_slurm")
    for process in (SMOKE.get("process"), slurm.RUNNING.get("process") if slurm else None):
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except Exception:  # noqa: BLE001 (the run is killed then)
                process.kill()


# The configs `dry_run` plans in a whole session (tests/test_workflow.py's and the docs' commands): the background
# lane plans them ahead, in this order (plan_configs)
DRY_RUN_CONFIGS = (None, "configs/smoke.yaml", "configs/gender.yaml", "configs/vision.yaml", "configs/minilm.yaml",
                   "configs/real.yaml", "configs/budget.yaml", "configs/budget-masks.yaml", "configs/matrix.yaml",
                   "configs/quick.yaml", "configs/srnets.yaml", "configs/your-model.yaml")


def planned_config(factory, configfile: str | None) -> str:
    """The stdout of `snakemake -n -p --cores 2` of a config (None: config.yaml) in a fresh folder, planned once per
    session by the first thread that asks (a test, or the lane: ``background.once``)."""
    from test_workflow import REPO, snakemake

    def plan() -> str:
        from maskbench.tools.facts import place_given_model

        args = ["-n", "-p", "--cores", "2"] + (["--configfile", str(REPO / configfile)] if configfile else [])
        workdir = factory.mktemp("dry")
        place_given_model(REPO / (configfile or "config.yaml"), workdir)  # docs/your-model.md's step 2
        result = snakemake(*args, workdir=workdir)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    return background.once(f"dry run of {configfile or 'config.yaml'}", plan)


def plan_configs(factory) -> None:
    """Every DRY_RUN_CONFIGS plan, one after the other (a failed one is raised to the tests that ask for it)."""
    for configfile in DRY_RUN_CONFIGS:
        with contextlib.suppress(BaseException):
            planned_config(factory, configfile)


@pytest.fixture(scope="session")
def dry_run(tmp_path_factory):
    """`dry_run(configfile)`: the plan of a config (``planned_config``), shared by the workflow tests and the docs
    test; the background lane plans DRY_RUN_CONFIGS ahead."""
    return functools.partial(planned_config, tmp_path_factory)


def plan_paper(factory):
    """`snakemake -n` of the paper config with the SLURM profile (site facts from the environment), as from a fresh
    clone: without the files and folders its user supplies (planning does not need them; FEVER-Symmetric is found in
    the project's data/nli/)."""
    from test_workflow import REPO, snakemake

    env = {"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
           "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}
    workdir = factory.mktemp("paper")
    result = snakemake("-n", "--configfile", str(REPO / "configs/paper.yaml"), "--profile",
                       str(REPO / "profiles/slurm"), workdir=workdir, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="session")
def paper_dry_run(tmp_path_factory):
    """The paper config's plan (``plan_paper``), once per session, from the background lane."""
    return background.result("paper_dry_run", lambda: plan_paper(tmp_path_factory))


# The background lane (tests/background.py): the session's heavy work that runs subprocesses, each piece started in
# turn at collection when a selected test uses its fixture, in the order the tests need them. Fixture -> (test module,
# or None for this one; its function of the session's tmp_path_factory).
LANE = (("paper_dry_run", None, "plan_paper"),
        ("paper_targets", "test_cost", "plan_paper_targets"),
        ("dry_run", None, "plan_configs"),
        ("env_pins_report", "test_environment", "resolve_env_pins"),
        ("quick_gpu_check", "test_gpu_check", "run_quick_check"),
        ("one_kill_record", "test_kills", "kill_one_fine_tuning"),
        ("hosted_and_direct_plans", "test_module", "plan_hosted_and_direct"),
        ("partial_run", "test_paper_miniature_run", "run_partial"),
        ("your_model_run", "test_your_model_page", "run_the_page"))


def lane_work(name: str):
    """The function of the lane's work ``name`` (LANE), of the session's tmp_path_factory."""
    import importlib

    module, function = next((module, function) for work, module, function in LANE if work == name)
    return getattr(importlib.import_module(module), function) if module else globals()[function]


def start_lane(factory, items) -> None:
    used = {name for item in items for name in getattr(item, "fixturenames", ())}
    works = [(name, functools.partial(lane_work(name), factory)) for name, _, _ in LANE if name in used]
    if works:
        background.start_lane("lane", works)


@pytest.fixture(scope="session")
def smoke_report(smoke_run, deps_only_python):
    """`snakemake --report report.html` of the smoke run, once per session (tests/test_workflow.py and
    tests/test_report.py read it)."""
    from test_workflow import REPO, snakemake

    report = smoke_run / "report.html"
    result = snakemake("--report", str(report), "--configfile", str(REPO / "configs/smoke.yaml"), workdir=smoke_run,
                       python=deps_only_python, env={"PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr[-3000:]
    return report


def pytest_addoption(parser):
    parser.addoption("--kills", action="store_true", default=False,
                     help="run the full kill harness (tests/test_kills.py, marker `kills`: 33 kills, minutes)")
    parser.addoption("--slurm-all", action="store_true", default=False,
                     help="the SLURM test reruns one job of every rule kind, not only tests/test_slurm.py's CI_RULES")
    parser.addoption("--kills-record", default=None,
                     help="where the full kill harness writes its record (default results/benchmarks/kill_harness.json)")


def whole_suite(config) -> bool:
    """Whether this session runs the whole suite (the README's `pytest`, CI): no paths, no selection."""
    return (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.collectonly
            and not config.option.keyword and not config.option.markexpr and not config.option.deselect
            and not getattr(config.option, "lf", False) and not getattr(config.option, "failedfirst", False))


def pytest_sessionstart(session):
    # the whole suite starts the smoke run before its tests are collected (about 25 s on one core: the other is
    # free); collection stops it again if no test that reads it is selected
    if whole_suite(session.config):
        session.config._tmp_path_factory.getbasetemp()  # made before any thread (see below)
        start_smoke_run(session.config._tmp_path_factory)


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected
def pytest_collection_modifyitems(config, items):
    # the background lane's work starts now; the tests that read the smoke run go last (in their order), and the run
    # starts now (unless the session's start did), in the background; the SLURM run starts when it ends, in the
    # background too, and its tests go last of all
    if not config.option.collectonly:
        # the session's base folder made here, before any thread: pytest makes it on first use, unlocked, and two
        # threads at once make two (a mktemp in one then fails "not a normalized and relative path", seen in CI)
        config._tmp_path_factory.getbasetemp()
        start_lane(config._tmp_path_factory, items)
        # the modules that take the lane's results go after the others, giving the lane time (whole modules: their
        # module-scoped fixtures are made once)
        lane = {name for name, _, _ in LANE}
        waiting = {item.nodeid.split("::")[0] for item in items if lane & set(getattr(item, "fixturenames", ()))}
        items[:] = ([item for item in items if item.nodeid.split("::")[0] not in waiting]
                    + [item for item in items if item.nodeid.split("::")[0] in waiting])
    reads_smoke = [item for item in items if "smoke_run" in getattr(item, "fixturenames", ())]
    if reads_smoke and not config.option.collectonly:
        # the other smoke tests, then the SLURM run's (last: it runs in the background meanwhile, having copied the
        # smoke run's folder before they start, as they change it for a while)
        slurm = [item for item in reads_smoke if "slurm_run" in item.fixturenames]
        later = set(reads_smoke)
        items[:] = ([item for item in items if item not in later]
                    + [item for item in reads_smoke if "slurm_run" not in item.fixturenames] + slurm)
        factory = config._tmp_path_factory
        start_smoke_run(factory)
        if slurm:
            every_rule = config.getoption("--slurm-all")
            SMOKE["slurm_copied"] = threading.Event()
            background.start("slurm_run", lambda: slurm_after_smoke(factory, every_rule))
    elif "process" in SMOKE:  # started at the session's start, and no selected test reads it
        SMOKE["process"].terminate()
        SMOKE["process"].wait()
    if config.getoption("--kills"):
        return
    skip = pytest.mark.skip(reason="the full kill harness runs with --kills (docs/testing.md)")
    for item in items:
        if "kills" in item.keywords:
            item.add_marker(skip)
