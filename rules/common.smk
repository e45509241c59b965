# Helpers every track shares: config validation, the results folder, seeds, compute needs, and small helpers for
# wildcards and arguments. A track's own helpers live in rules/<track>/common.smk (nlu: rules/nlu/common.smk for
# paper A and what papers A and C share, rules/nlu/srnets_common.smk for paper C).
# Module-level code only reads the config: it re-runs inside every cluster job (no clocks, no randomness; the one
# exception, the warm server of a group job, is below).
import atexit
import json
import os
import shlex
import signal
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

# maskbench's own folder (schemas/, src/, data/, config.yaml): the folder above this file's. Not workflow.basedir,
# which is the main Snakefile's folder: the host's, when a host workflow imports maskbench as a module
# (`module maskbench: snakefile: ...`; docs/module.md).
PROJECT_DIR = os.path.dirname(str(workflow.current_basedir))
SOURCE_DIR = os.path.join(PROJECT_DIR, "src")
# the config checks below import from the source tree, installed or not
sys.path.insert(0, SOURCE_DIR)

from maskbench.cli import Json, shell_args  # noqa: E402,F401 - the rules render their settings with these
from maskbench.workflow.warm import Server as WarmServer, jobs_run_here  # noqa: E402
from maskbench.workflow.workflow_config import check_references, check_renamed_keys, precision_options, tracks_of  # noqa: E402
from maskbench.workflow.cluster_requests import check_requests  # noqa: E402
from maskbench.workflow.cost.assumptions import recorded_curves  # noqa: E402
from maskbench.workflow.results_folder import check_results_folder, claim_results_folder, config_name, lock_results_folder  # noqa: E402
from maskbench.workflow import user_data  # noqa: E402
from maskbench.progress import job_settings  # noqa: E402
from maskbench.workflow.config_schema import ValidationError, validate_config  # noqa: E402

# schemas/config.schema.yaml holds the shared keys and applies schemas/<track>.schema.yaml for every track the
# config names, so a key that is neither shared nor of a named track is refused; the schemas' defaults are filled in
# (snakemake.utils.validate's checks, with each schema read once: src/maskbench/workflow/config_schema.py).
SCHEMAS = os.path.join(PROJECT_DIR, "schemas")
check_renamed_keys(config)
try:
    validate_config(config, SCHEMAS)
except ValidationError as err:
    raise WorkflowError("Error validating config file.", err) from None
check_references(config)
# each config in its own results folder: a folder another config's run has claimed is refused here
# (src/maskbench/workflow/results_folder.py); the claim is written when a run starts (onstart, below)
CONFIG_NAME = config_name(workflow.overwrite_configfiles or [])

# what a long job reports while it runs (config `logging:`, src/maskbench/progress.py) reaches every job through its
# environment, as PYTHONPATH does below; an exported value wins. TensorBoard without its package is refused here.
try:
    for _name, _value in job_settings(config.get("logging", {})).items():
        os.environ.setdefault(_name, _value)
except ValueError as err:
    raise WorkflowError(str(err)) from None
try:
    check_results_folder(config["results"], CONFIG_NAME)
except ValueError as err:
    raise WorkflowError(str(err)) from None

# A cluster job (snakemake's remote mode: every job the SLURM executor submits) never reaches the Hugging Face Hub:
# it reads the Hub cache `python -m maskbench.steps fetch` filled on the login node (docs/cluster.md, "Offline
# compute nodes"). Set here, before a group job's warm server starts (below), rather than in the profile so that
# the sbatch options stay the same; an exported HF_HUB_OFFLINE=0 (the plugin submits with --export=ALL) lets jobs
# on a site whose nodes reach the Hub download.
if workflow.remote_exec:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # SLURM's warning before a job's time limit (the profile's --signal=USR1@...) goes to every process of the job
    # step: this snakemake and the rule's shell, which inherits it, ignore it (by default it would end them); the
    # training step takes it to save its state (src/maskbench/stop.py). Before a group job's warm server starts.
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)

# Every job runs this source tree's code: its src/ leads the jobs' PYTHONPATH, so a rule's `python -m
# maskbench.steps ...` needs maskbench's dependencies only, not maskbench installed. That is how the per-rule
# environment of `--software-deployment-method conda` (envs/maskbench.yaml: the dependencies) reaches the code, and
# how a host workflow that imports maskbench as a module runs this copy rather than an installed one. A cluster job
# sets it again: its snakemake re-reads this file.
os.environ.update(PYTHONPATH=os.pathsep.join(
    dict.fromkeys([SOURCE_DIR, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])))

# The warm runner (src/maskbench/workflow/warm.py): in a local run, the jobs fork from one process that has imported torch
# and transformers once, instead of importing them again each (~9 s a job on 2 CPU cores). Never from the submit
# host of a cluster, nor where the rules run in environments of their own (--software-deployment-method conda or
# apptainer: the server would run the jobs in snakemake's environment instead); MASKBENCH_WARM=0 turns it off.
WARM = {}
OWN_ENVIRONMENTS = bool(workflow.deployment_settings.deployment_method)


def stop_warm_server():
    if WARM.get("server"):
        WARM.pop("server").stop()


# The snakemake of a cluster group job (it starts the group's jobs on its node and runs no onstart hook) starts its
# server here, the one exception to side-effect-free module code: only in that process, and it ends with it.
if workflow.remote_exec and not OWN_ENVIRONMENTS:
    WARM["server"] = WarmServer.start(local=True, jobs=jobs_run_here(sys.argv))
    if WARM["server"]:
        atexit.register(stop_warm_server)


def slurm_logs_under_results():
    """The SLURM plugin's job logs in <results>/logs/slurm (results/README.md), the config's results folder, which
    no profile can name: profiles/slurm sets no `slurm-logdir`, and before the first submission this points the
    plugin's executor (which took its log folder from the settings when it was made, just before onstart) there. A
    `--slurm-logdir` given on the command line is kept."""
    executor = getattr(getattr(workflow, "scheduler", None), "_executor", None)
    settings = getattr(workflow, "executor_settings", None)
    if hasattr(executor, "slurm_logdir") and getattr(settings, "logdir", "given") is None:
        executor.slurm_logdir = Path(workflow.workdir_init, R, "logs", "slurm")


# the files and folders the config reads from you (src/maskbench/workflow/user_data.py): planning does not need them and
# lists those missing or incomplete (the main snakemake process only, not the cluster jobs); a run refuses to
# start when a job it will execute reads one (onstart, below)
USER_INPUTS = user_data.user_inputs(config)
if workflow.is_main_process:
    _missing = user_data.problems(USER_INPUTS, os.getcwd(), PROJECT_DIR)
    if _missing:
        print(f"maskbench: {len(_missing)} of the files and folders this config reads from you are missing or "
              "incomplete; a run whose jobs read one is refused before it starts (docs/data.md):", file=sys.stderr)
        for _line in _missing:
            print(f"  {_line}", file=sys.stderr)


def jobs_to_run():
    """(rule name, wildcards) of every job this run will execute."""
    return [(job.rule.name, dict(job.wildcards_dict)) for job in workflow.dag.needrun_jobs()]


def refuse_missing_user_inputs(jobs):
    """Before the first job: a run that would read a missing or incomplete user input stops here, in one line."""
    found = user_data.problems_for_jobs(USER_INPUTS, jobs, os.getcwd(), PROJECT_DIR)
    if found:
        raise WorkflowError(user_data.refusal(found))


def check_cluster_requests(jobs):
    """A run that goes to a cluster: a runtime request below the derived need of a job it will execute, where that
    job does not resume, stops it before the first submission (src/maskbench/workflow/cluster_requests.py; docs/cluster.md,
    "Requests"). A local run has no time limit: nothing is checked."""
    try:
        check_requests(config, jobs, recorded_curves())
    except ValueError as err:
        raise WorkflowError(str(err)) from None


# the results folder's lock, held by the main snakemake process for as long as it runs
RESULTS_LOCK = {}


def hold_results_folder():
    """One run at a time on the config's results folder (src/maskbench/workflow/results_folder.py): a second run, from this
    working directory or another, is refused before its first job; then the folder is claimed for this config."""
    if not workflow.execution_settings.lock:
        return  # --nolock: the user keeps runs apart
    try:
        RESULTS_LOCK["fd"] = lock_results_folder(config["results"], CONFIG_NAME, os.getcwd())
        check_results_folder(config["results"], CONFIG_NAME)  # again, now that no other run can claim it
    except ValueError as err:
        raise WorkflowError(str(err)) from None


onstart:
    if workflow.is_main_process:
        _jobs = jobs_to_run()
        refuse_missing_user_inputs(_jobs)
        if not workflow.local_exec:
            check_cluster_requests(_jobs)
        hold_results_folder()
        claim_results_folder(config["results"], CONFIG_NAME)
    slurm_logs_under_results()
    WARM["server"] = WarmServer.start(
        local=workflow.local_exec and workflow.is_main_process and not OWN_ENVIRONMENTS,
        jobs=sum(1 for job in workflow.dag.needrun_jobs() if job.is_shell))


onsuccess:
    stop_warm_server()


onerror:
    stop_warm_server()


R = config["results"]
TRACKS = tracks_of(config)
SEEDS = [int(s) for s in config["seeds"]]
COMPUTE = config["compute"]

# what the Snakefile's targets build, each track adding its files (rules/<track>/common.smk): target -> files
TARGETS = {"all": [], "prepare": [], "train": [], "masks": [], "evaluate": []}
# one table or figure at a time (docs/cluster.md, "One table at a time"): target name -> the files that table, figure
# or paper needs, each track adding the targets of what it plans; the Snakefile makes a rule of each
PAPER_TARGETS = {}
# the cross-paper matrix (config `matrix:`, rules/matrix.smk): each track planning matrix cells adds its records
# file here (rules/<track>/common.smk)
MATRIX_CELLS = []
# a checkpoint only evaluations read, deleted once they have all finished when compute.temp_checkpoints is set
scored_checkpoint = lambda path: temp(path) if COMPUTE.get("temp_checkpoints") else path
# what a light one-core job (a report, a records file) asks of a cluster
LIGHT_RESOURCES = {"mem_mb": COMPUTE["eval_mem_mb"], "runtime": COMPUTE["eval_runtime_min"]}


wildcard_constraints:
    seed=r"\d+",


def alternation(names):
    """A wildcard regex that matches exactly these names."""
    return "|".join(sorted(names)) if names else "__none__"


def as_json(obj):
    """A shell-quoted JSON argument (config values pass to entry points as JSON, in config order)."""
    return shlex.quote(json.dumps(obj))


def quoted(paths):
    """Shell words for a path or a list of paths. A shell command quotes its own placeholders (`{input.x:q}`);
    a params function that builds several options puts every path through this, so that a results folder with
    spaces (`results: "res spaced"`) stays one word."""
    if isinstance(paths, str):
        return shlex.quote(paths)
    return " ".join(shlex.quote(str(p)) for p in paths)


def local_file(source, owner, key):
    """The file a `local:<path>` source names ([] for any other source), as an input, so that a changed file reruns
    what reads it. A relative path is looked up in the working directory, then in the project folder (where data/
    ships); a missing file stops the workflow here, before any job runs, naming the owner and its config key (for
    files read while planning: your own model's checks; a job's input is `local_input`)."""
    place = local_path(source)
    if place is None:
        return []
    if os.path.exists(place):
        return place
    target = source.removeprefix("local:")
    places = [target] if os.path.isabs(target) else [target, os.path.join(PROJECT_DIR, target)]
    looked = " nor ".join(os.path.abspath(p) for p in dict.fromkeys(places))
    raise WorkflowError(f"{owner}: field 'source' names the local file {target!r}, which does not exist (neither "
                        f"{looked}); put the file there or fix {key}")


def local_input(source):
    """The file of a `local:` source as a job's input, so that a changed file reruns what reads it ([] for any other
    source, and for a file not there yet: planning goes on without it, and the run is refused before it starts
    when a job it executes reads it, `refuse_missing_user_inputs`)."""
    path = local_path(source)
    return path if path is not None and os.path.exists(path) else []


def local_path(source):
    """Where the file of a `local:` source is: a relative path in the working directory, then in the project folder
    (where data/ ships); the path as named when it is in neither. None for any other source."""
    target = source.removeprefix("local:")
    if target == source:
        return None
    places = [target] if os.path.isabs(target) else [target, os.path.join(PROJECT_DIR, target)]
    return next((place for place in places if os.path.exists(place)), target)


def svg_beside(*pngs):
    """The SVG that every figure step writes beside each PNG (maskbench.report.figure_files), as outputs."""
    flat = [p for png in pngs for p in ([png] if isinstance(png, str) else png)]
    return [os.path.splitext(png)[0] + ".svg" for png in flat]


def training_gpus():
    return COMPUTE["gpus_per_training_job"]


def late_resume_options():
    """`--checkpoint-every` of a step made resumable after its results existed (the FFW steps, gender_task): given
    only when compute.checkpoint_every is on (> 0), so that with 0 the command line stays what it was."""
    every = COMPUTE["checkpoint_every"]
    return {"checkpoint_every": every} if every else {}


def precision_args(section=None):
    """`--precision` / `--tf32` of a training or scoring job (compute's, or paper C's, B's or D's own: section
    srnets, gender or vision); empty at fp32 without TF32, the steps' defaults."""
    return shell_args(**precision_options(config, section))


# the config files snakemake was given (the embedded config.yaml without one), for the fetch rule (rules/fetch.smk)
FETCH_CONFIGFILES = [str(f) for f in workflow.overwrite_configfiles] or [os.path.join(PROJECT_DIR, "config.yaml")]
