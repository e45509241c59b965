# Mask search (paper A's masked debiasing): the baseline of each seed is frozen and only pruning scores train,
# with a debiasing loss; one mask file per (task, method, loss, bias source, seed). The masks of a seed are then
# scored on one loaded model, switched without reloading its weights (evaluate_masks_<task>).


rule search_mask:
    input:
        unpack(mask_search_inputs),
    output:
        mask=f"{R}/{NLU}/{{task}}/{MODEL}/masks/method~{{method}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.mask",
        summary=f"{R}/{NLU}/{{task}}/{MODEL}/masks/method~{{method}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.search.json",
    wildcard_constraints:
        method=MASK_METHOD,
        source=alternation(list(SOURCES) + ["none"]),
    params:
        checkpoint_every=COMPUTE["checkpoint_every"],
        deterministic=int(COMPUTE["deterministic"]),
        model_dir=model_dir_of,
        spec=mask_search_spec(),
        hparams=as_json(mask_search_hparams()),
        loss_hparams=mask_loss_hparams,
        bias=bias_option,
        teacher=teacher_option,
    log:
        f"{R}/logs/search_mask/{{task}}/method~{{method}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/search_mask/{{task}}/method~{{method}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_search --model-dir {params.model_dir:q}"
        " --train {input.train:q} --dev {input.dev:q} --spec {params.spec} --hparams {params.hparams} --loss {wildcards.loss}"
        " --loss-hparams {params.loss_hparams} {params.bias} {params.teacher} --seed {wildcards.seed}"
        " --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} --out {output.mask:q} --summary {output.summary:q} > {log:q} 2>&1"


for _task in TASKS if MASK_ROWS else []:

    rule:
        name:
            f"evaluate_masks_{_task}"
        input:
            unpack(evaluate_masks_inputs_of(_task)),
        output:
            metrics=[evaluation_json(_task, r, "{seed}", e) for r in MASK_ROWS for e in eval_set_names(_task)],
            predictions=[evaluation_predictions(_task, r, "{seed}", e) for r in MASK_ROWS for e in eval_set_names(_task)],
        params:
            model_dir=model_dir_of,
            rows=" ".join(MASK_ROWS),
            out_dirs=eval_dirs_of(_task, MASK_ROWS),
            eval_sets=as_json(eval_set_specs(_task)),
            task=_task,
            max_length=config["finetune"]["max_length"],
            batch_size=config["finetune"]["eval_batch_size"],
            length_sorted=LENGTH_SORTED_EVAL,
        log:
            f"{R}/logs/evaluate_masks/{_task}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/evaluate_masks/{_task}/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["eval_mem_mb"],
            runtime=COMPUTE["eval_runtime_min"],
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.evaluate_masks --model-dir {params.model_dir:q} --masks {input.masks:q}"
            " --rows {params.rows} --out-dirs {params.out_dirs} --data {input.data:q} --eval-sets {params.eval_sets}"
            " --task {params.task} --seed {wildcards.seed} --max-length {params.max_length}"
            " --batch-size {params.batch_size} --length-sorted {params.length_sorted} --threads {threads} > {log:q} 2>&1"


rule mask_report:
    # paper A figure 2 (pruning rate per module type and layer, mean over seeds) and how stable a search is
    # across seeds (Jaccard of the pruned sets)
    input:
        masks=mask_files(),
    output:
        rates=report(f"{R}/tables/pruning_rates.csv", caption="captions/pruning_rates.rst", category="Masks"),
        figure=report(f"{R}/figures/pruning_rates.png", caption="captions/pruning_rates.rst", category="Masks"),
        overlap=f"{R}/tables/mask_seed_overlap.csv",
        overlap_summary=report(f"{R}/tables/mask_seed_overlap_summary.csv", caption="captions/mask_seed_overlap.rst",
                               category="Masks"),
    params:
        mask_keys=" ".join(mask_report_keys()),
    log:
        f"{R}/logs/mask_report/mask_report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_report --masks {input.masks:q} --keys {params.mask_keys}"
        " --out-rates {output.rates:q} --out-figure {output.figure:q} --out-overlap {output.overlap:q}"
        " --out-overlap-summary {output.overlap_summary:q} > {log:q} 2>&1"


rule mask_benchmark:
    # search-step time vs fine-tuning step, mask file bytes vs the entropy bound, apply + revert time
    input:
        masks=mask_files(),
    output:
        json=f"{R}/benchmarks/masks.json",
    params:
        mask_files=lambda wildcards, input: f"--mask-files {quoted(input.masks)}" if input.masks else "",
        options=" ".join(f"--{k.replace('_', '-')} {v}" for k, v in config["mask_benchmark"].items()),
    log:
        f"{R}/logs/mask_benchmark/masks.log",
    benchmark:
        f"{R}/benchmarks/rules/mask_benchmark/masks.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_benchmark --out {output.json:q} {params.mask_files} {params.options}"
        " --threads {threads} > {log:q} 2>&1"
