# The names and helpers shared by the files of rules/ (the results folder, tracks, seeds and compute section, the
# targets each track adds to) and small helpers for wildcards, arguments and local files. A track's own helpers live in
# rules/<track>/common.smk (nlu: rules/nlu/common.smk for paper A and what papers A and C share,
# rules/nlu/srnets_common.smk for paper C). Read after rules/setup.smk and rules/lifecycle.smk.
import json
import os
import shlex

from snakemake.exceptions import WorkflowError

from maskbench.cli import Json, shell_args  # noqa: F401 - the rules render their settings with these
from maskbench.workflow.workflow_config import precision_options, tracks_of

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
