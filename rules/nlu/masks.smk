# Mask search (paper A's masked debiasing): the baseline of each seed is frozen and only pruning scores train,
# with a debiasing loss; one mask file per (task, method, loss, bias source, seed). The masks of a seed are then
# scored on one loaded model, switched without reloading its weights (evaluate_masks_<task>).


rule search_mask:
    input:
        unpack(mask_search_inputs),
    output:
        mask=f"{P.mask_stem('{task}', '{method}', '{loss}', '{source}', '{seed}')}.mask",
        summary=f"{P.mask_stem('{task}', '{method}', '{loss}', '{source}', '{seed}')}.search.json",
    wildcard_constraints:
        method=MASK_METHOD,
        source=alternation(list(SOURCES) + ["none"]),
    params:
        args=lambda wildcards, input, output: mask_search_args(
            wildcards, input, output, P.mask_search_spec(), P.mask_search_hparams(), wildcards.loss,
            P.loss_hparams(MD, wildcards.loss, wildcards.source)),
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
        "python -m maskbench.steps nlu.mask_search {params.args} --threads {threads} > {log:q} 2>&1"


for _task in TASKS if MASK_ROWS else []:

    rule:
        name:
            f"evaluate_masks_{_task}"
        input:
            model=f"{checkpoint_dir(_task, '{seed}')}/model.safetensors",
            masks=[mask_file(_task, r, "{seed}") for r in MASK_ROWS],
            data=[prepared_path(e) for e in eval_set_names(_task)],
        output:
            metrics=P.evaluation_outputs(_task, MASK_ROWS, "{seed}", "metrics"),
            predictions=P.evaluation_outputs(_task, MASK_ROWS, "{seed}", "predictions"),
        params:
            args=evaluate_args(_task, MASK_ROWS, masks_of("masks")),
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
            "python -m maskbench.steps nlu.evaluate_masks {params.args} --threads {threads} > {log:q} 2>&1"


rule mask_report:
    """A: pruning rates, mask overlap"""
    # paper A figure 2 (pruning rate per module type and layer, mean over seeds) and how stable a search is
    # across seeds (Jaccard of the pruned sets)
    input:
        masks=P.mask_files(),
    output:
        rates=report(f"{R}/tables/pruning_rates.csv", caption="captions/pruning_rates.rst", category="Masks"),
        figure=report(f"{R}/figures/pruning_rates.png", caption="captions/pruning_rates.rst", category="Masks"),
        figure_svg=svg_beside(f"{R}/figures/pruning_rates.png"),
        overlap=report(f"{R}/tables/mask_seed_overlap.csv", caption="captions/mask_seed_overlap.rst", category="Masks"),
        overlap_summary=report(f"{R}/tables/mask_seed_overlap_summary.csv", caption="captions/mask_seed_overlap.rst",
                               category="Masks"),
    params:
        args=lambda wildcards, input, output: shell_args(
            masks=input.masks, keys=P.mask_report_keys(), out_rates=output.rates, out_figure=output.figure,
            out_overlap=output.overlap, out_overlap_summary=output.overlap_summary),
    log:
        f"{R}/logs/mask_report/mask_report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_report {params.args} > {log:q} 2>&1"


rule mask_benchmark:
    """A: mask overhead benchmark"""
    # search-step time vs fine-tuning step, mask file bytes vs the entropy bound, apply + revert time
    input:
        masks=P.mask_files(),
    output:
        json=f"{R}/benchmarks/masks.json",
    params:
        args=lambda wildcards, input, output: shell_args(
            out=output.json, mask_files=list(input.masks),
            **{k: v for k, v in config["mask_benchmark"].items() if k != "plan"}),
    log:
        f"{R}/logs/mask_benchmark/masks.log",
    benchmark:
        f"{R}/benchmarks/rules/mask_benchmark/masks.tsv"
    threads: 2
    resources:
        mem_mb=COMPUTE["benchmark_mem_mb"],
        runtime=30,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_benchmark {params.args} --threads {threads} > {log:q} 2>&1"
