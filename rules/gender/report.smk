# Paper B's tables and figures, rebuilt from the runs' summaries, SEAT, task and masked-LM files; no model runs here.


# the caption of each table the report step writes beside runs.csv (the figures' data take their figure's caption)
GENDER_TABLE_CAPTIONS = {"layer_density.csv": "gender_density", "heads.csv": "gender_heads",
                         "performance_bias.csv": "gender_performance"}


rule gender_report:
    """B: tables, figures"""
    input:
        summaries=[run.summary for run in GPLAN.runs],
        seats=[run.seat for run in GPLAN.runs],
        original=GPLAN.original_seat,
        tasks=[path for run in GPLAN.runs for path in run.tasks.values()],
        original_tasks=GPLAN.original_tasks,
        lm=[run.lm for run in GPLAN.runs if run.lm],
        original_lm=GPLAN.original_lm,
    output:
        runs=report(f"{GPLAN.tables_dir}/runs.csv", caption="captions/gender_tables.rst", category="Paper B"),
        seat=report(f"{GPLAN.tables_dir}/seat_long.csv", caption="captions/gender_tables.rst", category="Paper B"),
        # the figures' data, paper B's Tables 1, 2 and 4 (a kind of run planned) and the figure-3 points (tasks)
        csv=[report(path, caption=f"captions/{GENDER_TABLE_CAPTIONS.get(os.path.basename(path), 'gender_tables')}.rst",
                    category="Paper B") for path in GPLAN.report_tables()],
        tables=report(f"{GPLAN.tables_dir}/tables.md", caption="captions/gender_tables.rst", category="Paper B"),
        density=report(f"{GPLAN.figures_dir}/layer_density.png", caption="captions/gender_density.rst",
                       category="Paper B"),
        heads=report(f"{GPLAN.figures_dir}/heads.png", caption="captions/gender_heads.rst", category="Paper B"),
        # paper B's figure 3 (task accuracy against bias) when the config measures task performance
        performance=[report(path, caption="captions/gender_performance.rst", category="Paper B")
                     for path in GPLAN.performance_figure],
        svg=svg_beside([f"{GPLAN.figures_dir}/layer_density.png", f"{GPLAN.figures_dir}/heads.png"],
                       GPLAN.performance_figure),
    params:
        args=lambda wildcards, input, output: shell_args(
            runs=Json(GPLAN.report_runs()), original_seat=input.original, tests=GPLAN.seat_tests,
            tables_dir=os.path.dirname(output.runs), figures_dir=os.path.dirname(output.density),
            original_tasks=list(input.original_tasks) or None, original_lm=input.original_lm[0] if input.original_lm else None,
            label=config.get("label")),
    log:
        f"{R}/logs/gender_report/report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.report {params.args} > {log:q} 2>&1"
