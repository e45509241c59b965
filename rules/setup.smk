# What the workflow does when it is read, in every snakemake process (the main one and each cluster job's): the
# config checked against the schemas and for dangling references, its results folder checked, and the environment
# every job inherits (PYTHONPATH, the progress settings, HF_HUB_OFFLINE and SIGUSR1 on cluster nodes). Module-level
# code here only reads the config and sets the environment: no clocks, no randomness. Then rules/lifecycle.smk (what a
# run does around its jobs) and rules/common.smk (the names and helpers the rule files share).
import os
import signal
import sys

from snakemake.exceptions import WorkflowError

# maskbench's own folder (schemas/, src/, data/, config.yaml): the folder above this file's. Not workflow.basedir,
# which is the main Snakefile's folder: the host's, when a host workflow imports maskbench as a module
# (`module maskbench: snakefile: ...`; docs/module.md).
PROJECT_DIR = os.path.dirname(str(workflow.current_basedir))
SOURCE_DIR = os.path.join(PROJECT_DIR, "src")
# the config checks below import from the source tree, installed or not
sys.path.insert(0, SOURCE_DIR)

from maskbench.workflow.workflow_config import check_references, check_renamed_keys  # noqa: E402
from maskbench.workflow.results_folder import check_results_folder, config_name  # noqa: E402
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
