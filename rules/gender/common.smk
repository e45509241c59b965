# The gender track's names (paper B): the plan of its runs and files (src/maskbench/tracks/gender/workflow_plan.py,
# pure functions of the config) and the input functions that ask it. Module-level code only reads the config: it
# re-runs inside every cluster job.
from maskbench.tracks.gender.workflow_plan import GenderPlan

GPLAN = GenderPlan(config, R, PROJECT_DIR)
GMODEL = GPLAN.model_name  # the model's folder in logs and benchmarks
GBASE = GPLAN.base
GRUNS = alternation(GPLAN.folders())  # the values of a per-run evaluation's {grun}: the planned runs' folders


wildcard_constraints:
    granularity=r"block\d+|head",
    glayers=r"first|last|all|intermediate",
    gmode=r"token|sentence",
    gtask=r"[A-Za-z0-9_]+",
    gsplit=r"train|dev",
    gffw=r"ffw|ffw_structured",
    gamma=r"[0-9.e+-]+",


for _target, _files in GPLAN.targets().items():
    TARGETS[_target] += _files
# paper B's target: its report (tables and figures) and the shrunk models, without the matrix's FFW runs
PAPER_TARGETS["paper_b"] = ([GPLAN.structured] if GPLAN.shrink_masks else []) + GPLAN.report_files()

# the cross-paper matrix (config matrix: and gender.ffw): the track's records file (rules/gender/ffw.smk)
if GPLAN.matrix_cells:
    MATRIX_CELLS.append(GPLAN.matrix_cells)


def gender_corpus_file(wildcards):
    """The corpus's local file: gender.corpus.source local:<file>, a URL's download (rule gender_corpus_download,
    on the login node), or the file of gender.corpus.dataset."""
    return GPLAN.corpus_download or local_input(GPLAN.corpus_source()[0])


def gender_corpus_path():
    """Where the corpus's local file is (the command names it even before it is there), or None."""
    return GPLAN.corpus_download or local_path(GPLAN.corpus_source()[0])


def gender_task_local_file(wildcards):
    """A task split's local file (a registry entry with a local: source), an input of its preparation."""
    return local_input(GPLAN.task_split_source(wildcards.gtask, wildcards.gsplit)[0])


def task_data_input(wildcards):
    return {split: GPLAN.task_data(wildcards.gtask, split) for split in ("train", "dev")}


def run_marker(wildcards):
    """The finished output of the planned run a per-run evaluation (SEAT, task, masked-LM bias) reads: the mask,
    or the checkpoint's marker."""
    return GPLAN.run(wildcards.grun, wildcards.seed).marker


def run_out(wildcards):
    """The run as its evaluation step reads it (--run): the mask file or checkpoint folder; None (no --run) in the
    original encoder's jobs, which have no run."""
    return GPLAN.run(wildcards.grun, wildcards.seed).out if hasattr(wildcards, "grun") else None


def debias_args(wildcards, input, output):
    """gender.debias's arguments for the planned run whose summary the job writes, in the order its mask files
    record them (provenance.argv)."""
    run = GPLAN.run_writing(output.summary)
    return shell_args(model=GPLAN.model, corpus=input.corpus, spec=GPLAN.spec(run), hparams=GPLAN.hparams(run.kind),
                      seed=run.seed, checkpoint_every=GPLAN.checkpoint_every, out=run.out,
                      summary=output.summary, **precision_options(config, "gender"))


def gender_ffw_args(wildcards, input, output):
    """gender.ffw's arguments for the planned FFW run whose mask the job writes."""
    run = GPLAN.ffw_run_writing(output.mask)
    return shell_args(model=GPLAN.model, corpus=input.corpus, method=run.method, settings=Json(GPLAN.ffw_settings(run)),
                      seed=run.seed, out=output.mask, summary=output.summary, **late_resume_options(),
                      **precision_options(config, "gender"))
