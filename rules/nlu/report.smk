# Tables and figures, rebuilt from the evaluation JSONs alone (no model runs here).


rule table1:
    """A: Table 1"""
    input:
        evals=P.evaluation_jsons(),
        # with `tradeoff:` a "<row>_selected" row per swept row: the point the selection rule picks
        sweep_evals=SW.point_evals() if SWEEPS else [],
        selection=[P.table("tradeoff_selection.csv")] if SWEEPS else [],
        engagement=P.table("engagement.csv"),
    output:
        csv=report(f"{R}/tables/table1.csv", caption="captions/table1.rst", category="Table 1"),
        md=f"{R}/tables/table1.md",
        tex=f"{R}/tables/table1.tex",
    params:
        args=lambda wildcards, input, output: shell_args(
            evals=[*input.evals, *input.sweep_evals], columns=config["report"]["table1"]["columns"], rows=Json(ROWS),
            selected=list(input.selection) or None, out_csv=output.csv, out_md=output.md, out_tex=output.tex,
            label=config.get("label"), engagement=input.engagement,
            # a table of the config's own (no `paper: A`) prints no published figure; its rows' own names
            **table1_own_options()),
    log:
        f"{R}/logs/table1/table1.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.table1 {params.args} > {log:q} 2>&1"


if SWEEPS:

    # Table 1 with the paper's rows only (target paper_a_table1): table1 adds a "<row>_selected" row per swept row,
    # which needs every trade-off point; this one needs the rows' own runs alone
    rule table1_paper_rows:
        """A: Table 1 (paper rows)"""
        input:
            evals=P.evaluation_jsons(),
        output:
            csv=f"{R}/tables/table1_paper_rows.csv",
            md=f"{R}/tables/table1_paper_rows.md",
            tex=f"{R}/tables/table1_paper_rows.tex",
        params:
            args=lambda wildcards, input, output: shell_args(
                evals=list(input.evals), columns=config["report"]["table1"]["columns"], rows=Json(ROWS),
                out_csv=output.csv, out_md=output.md, out_tex=output.tex, **table1_own_options()),
        log:
            f"{R}/logs/table1/table1_paper_rows.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.table1 {params.args} > {log:q} 2>&1"


# whether each run behind Table 1 engaged (a mask that prunes, a fine-tuning above chance), the trade-off's points
# under their point names included (a "selected" row is its point's runs): Table 1 marks the rows that did not
ENGAGEMENT_RUNS = P.engagement_runs() + SW.engagement_runs()


rule engagement:
    """A, C: engagement of Table 1's runs"""
    input:
        runs=[run["path"] for run in ENGAGEMENT_RUNS],
    output:
        csv=report(P.table("engagement.csv"), caption="captions/engagement.rst", category="Table 1"),
        md=P.table("engagement.md"),
    params:
        args=lambda wildcards, output: shell_args(runs=Json(ENGAGEMENT_RUNS), out_csv=output.csv,
                                                  out_md=output.md, label=config.get("label")),
    log:
        f"{R}/logs/engagement/engagement.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.engagement {params.args} > {log:q} 2>&1"


rule baseline_curve:
    """A: baseline curve"""
    input:
        summaries=[f"{checkpoint_dir(task, seed)}/train_summary.json" for task in TASKS for seed in SEEDS],
    output:
        csv=report(f"{R}/tables/baseline_curve.csv", caption="captions/baseline_curve.rst", category="Table 1"),
        md=f"{R}/tables/baseline_curve.md",
    params:
        args=lambda wildcards, output: shell_args(
            models=[checkpoint_dir(task, seed) for task in TASKS for seed in SEEDS],
            tasks=[task for task in TASKS for seed in SEEDS], out_csv=output.csv, out_md=output.md,
            label=config.get("label")),
    log:
        f"{R}/logs/baseline_curve/baseline_curve.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.baseline_curve {params.args} > {log:q} 2>&1"


rule figure_id_ood:
    """A: ID-OOD figure"""
    input:
        table=rules.table1.output.csv,
    output:
        png=report(f"{R}/figures/id_ood.png", caption="captions/id_ood.rst", category="Figures"),
        csv=report(f"{R}/figures/id_ood.csv", caption="captions/id_ood.rst", category="Figures"),
        svg=svg_beside(f"{R}/figures/id_ood.png"),
    params:
        args=lambda wildcards, input, output: shell_args(
            table=input.table, columns=config["report"]["table1"]["columns"], out=output.png, out_csv=output.csv,
            row_labels=table1_own_options().get("row_labels")),
    log:
        f"{R}/logs/figure_id_ood/id_ood.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.figure_id_ood {params.args} > {log:q} 2>&1"
