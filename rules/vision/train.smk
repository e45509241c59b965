# Vanilla training from scratch on each dataset level's biased split (paper D's starting point), one job per
# (dataset, level, seed); the snapshots of `snapshot_epochs` come from the same run.
# The snapshot folders (<model dir>/epoch~<E>/) are written before the run's summary, so the summary stands for
# them too: the FFW runs of Table 6 depend on it.


rule train_vision:
    input:
        train=split_path("{vdataset}", "{level}", "train"),
        val=split_path("{vdataset}", "{level}", "unbiased_val"),
    output:
        summary=vmodel_marker("{vdataset}", "{level}", "{seed}"),
    params:
        model_spec=lambda wildcards: as_json(vmodel_of(wildcards.vdataset)),
        hparams=lambda wildcards: as_json(vmodel_of(wildcards.vdataset)["train"]),
        snapshots=lambda wildcards: snapshot_option(vmodel_of(wildcards.vdataset).get("snapshot_epochs", [])),
        checkpoint_every=COMPUTE["checkpoint_every"],
        deterministic=int(COMPUTE["deterministic"]),
        out_dir=folder_of_output("summary"),
    log:
        f"{R}/logs/train_vision/{{vdataset}}/{{level}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/train_vision/{{vdataset}}/{{level}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.train --train {input.train:q} --val {input.val:q}"
        " --model-spec {params.model_spec} --hparams {params.hparams} --seed {wildcards.seed}"
        " {params.snapshots} --checkpoint-every {params.checkpoint_every}"
        " --deterministic {params.deterministic} --threads {threads} --out-dir {params.out_dir:q} > {log:q} 2>&1"
