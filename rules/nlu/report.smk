# Tables and figures, rebuilt from the evaluation JSONs alone (no model runs here).


rule table1:
    input:
        evals=evaluation_jsons(),
        # with `tradeoff:` a "<row>_selected" row per swept row: the point the selection rule picks
        sweep_evals=sweep_point_evals() if SWEEPS else [],
        selection=[f"{R}/tables/tradeoff_selection.csv"] if SWEEPS else [],
    output:
        csv=report(f"{R}/tables/table1.csv", caption="captions/table1.rst", category="Table 1"),
        md=f"{R}/tables/table1.md",
        tex=f"{R}/tables/table1.tex",
    params:
        columns=as_json(config["report"]["table1"]["columns"]),
        rows=as_json(ROWS),
        selected=lambda wildcards, input: f"--selected {quoted(input.selection)}" if input.selection else "",
    log:
        f"{R}/logs/table1/table1.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.table1 --evals {input.evals:q} {input.sweep_evals:q} --columns {params.columns}"
        " --rows {params.rows} {params.selected}"
        " --out-csv {output.csv:q} --out-md {output.md:q} --out-tex {output.tex:q} > {log:q} 2>&1"


rule baseline_curve:
    input:
        summaries=[f"{checkpoint_dir(task, seed)}/train_summary.json" for task in TASKS for seed in SEEDS],
    output:
        csv=report(f"{R}/tables/baseline_curve.csv", caption="captions/baseline_curve.rst", category="Table 1"),
        md=f"{R}/tables/baseline_curve.md",
    params:
        models=quoted([checkpoint_dir(task, seed) for task in TASKS for seed in SEEDS]),
        tasks=" ".join(task for task in TASKS for seed in SEEDS),
    log:
        f"{R}/logs/baseline_curve/baseline_curve.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.baseline_curve --models {params.models} --tasks {params.tasks}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule figure_id_ood:
    input:
        table=rules.table1.output.csv,
    output:
        png=report(f"{R}/figures/id_ood.png", caption="captions/id_ood.rst", category="Figures"),
        csv=f"{R}/figures/id_ood.csv",
    params:
        columns=as_json(config["report"]["table1"]["columns"]),
    log:
        f"{R}/logs/figure_id_ood/id_ood.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.figure_id_ood --table {input.table:q} --columns {params.columns}"
        " --out {output.png:q} --out-csv {output.csv:q} > {log:q} 2>&1"
