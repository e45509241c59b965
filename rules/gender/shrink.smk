# Structured masks materialised: the heads and FFN neurons a frozen run's mask took out really removed, the smaller
# dense encoder checked against the masked one, its parameters and CPU latency beside the dense encoder's.


rule gender_shrink:
    input:
        masks=GSHRINK_MASKS,
        encoder=GENCODER_INPUT,
    output:
        GENDER_STRUCTURED,
    params:
        model=encoder_of_input,
        batch=GSHRINK.get("batch", 32),
        length=GSHRINK.get("length", 32),
        repeats=GSHRINK.get("repeats", 20),
        rounds=GSHRINK.get("rounds", 3),
    log:
        f"{R}/logs/gender_shrink/{GMODEL}.log",
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.shrink --model {params.model:q} --masks {input.masks:q}"
        " --batch {params.batch} --length {params.length} --repeats {params.repeats} --rounds {params.rounds}"
        " --threads {threads} --out {output:q} > {log:q} 2>&1"
