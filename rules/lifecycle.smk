# What a run does around its jobs: the warm runner (one process that has imported torch once, the jobs forked from
# it), the SLURM log folder, and before the first job the user's inputs and the cluster's runtime requests checked and
# the results folder locked and claimed (onstart); the warm runner stopped at the end (onsuccess, onerror). After
# rules/setup.smk; the one side effect at read time is a cluster group job's warm server, below.
import atexit
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from maskbench.workflow.warm import Server as WarmServer, jobs_run_here
from maskbench.workflow.cluster_requests import check_requests
from maskbench.workflow.cost.assumptions import recorded_curves
from maskbench.workflow.results_folder import claim_results_folder, lock_results_folder
from maskbench.workflow import user_data

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
