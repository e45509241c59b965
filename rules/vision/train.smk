# Vanilla training from scratch on each dataset level's biased split (paper D's starting point), one job per
# (dataset, level, seed); the snapshots of `snapshot_epochs` come from the same run.
# The snapshot folders (<model dir>/epoch~<E>/) are written before the run's summary, so the summary stands for
# them too: the FFW runs of Table 6 depend on it.


rule train_vision:
    input:
        train=VISION.split("{vdataset}", "{level}", "train"),
        val=VISION.split("{vdataset}", "{level}", "unbiased_val"),
    output:
        summary=VISION.model_marker("{vdataset}", "{level}", "{seed}"),
    params:
        args=lambda wildcards, input, output: shell_args(
            train=input.train, val=input.val, **VISION.train_settings(wildcards.vdataset), seed=wildcards.seed,
            checkpoint_every=COMPUTE["checkpoint_every"], deterministic=int(COMPUTE["deterministic"]),
            out_dir=os.path.dirname(output.summary), **precision_options(config, "vision")),
    log:
        f"{R}/logs/train_vision/{SEED_JOB}.log",
    benchmark:
        f"{R}/benchmarks/rules/train_vision/{SEED_JOB}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        **VISION_TRAINING,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.train {params.args} --threads {threads} > {log:q} 2>&1"
