# Paper B's tables and figures, rebuilt from the runs' summaries, SEAT, task and masked-LM files; no model runs here.


rule gender_report:
    input:
        summaries=[run["summary"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS],
        seats=[run["seat"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS],
        original=GENDER_ORIGINAL_SEAT,
        tasks=[path for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS for path in run["tasks"].values()],
        original_tasks=[path for paths in GENDER_ORIGINAL_TASKS.values() for path in paths],
        lm=[run["lm"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS if run["lm"]],
        original_lm=[GENDER_ORIGINAL_LM] if GLM else [],
    output:
        runs=report(f"{R}/tables/{GENDER}/runs.csv", caption="captions/gender_tables.rst", category="Paper B"),
        seat=f"{R}/tables/{GENDER}/seat_long.csv",
        tables=report(f"{R}/tables/{GENDER}/tables.md", caption="captions/gender_tables.rst", category="Paper B"),
        density=report(f"{R}/figures/{GENDER}/layer_density.png", caption="captions/gender_density.rst",
                       category="Paper B"),
        heads=report(f"{R}/figures/{GENDER}/heads.png", caption="captions/gender_heads.rst", category="Paper B"),
        performance=GENDER_PERFORMANCE_FIGURE,
    params:
        runs=as_json([{k: run[k] for k in ("kind", "granularity", "layers", "mode", "seed", "summary", "seat", "tasks", "lm")}
                      | ({"objective": run["objective"]} if run.get("objective") else {})
                      for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS]),
        tests=" ".join(GCFG["seat"]["tests"]),
        original_tasks=lambda wildcards, input: "--original-tasks " + " ".join(map(shlex.quote, input.original_tasks))
        if input.original_tasks else "",
        original_lm=lambda wildcards, input: f"--original-lm {shlex.quote(input.original_lm[0])}" if input.original_lm else "",
        tables_dir=folder_of_output("runs"),
        figures_dir=folder_of_output("density"),
    log:
        f"{R}/logs/gender_report/report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.report --runs {params.runs} --original-seat {input.original:q}"
        " --tests {params.tests} --tables-dir {params.tables_dir:q} --figures-dir {params.figures_dir:q}"
        " {params.original_tasks} {params.original_lm}"
        " > {log:q} 2>&1"
