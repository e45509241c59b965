# Structured masks materialised: the heads and FFN neurons a frozen run's mask took out really removed, the smaller
# dense encoder checked against the masked one, its parameters and CPU latency beside the dense encoder's.


rule gender_shrink:
    """B: shrunk models"""
    input:
        masks=GPLAN.shrink_masks,
        encoder=GPLAN.encoder_input,
    output:
        GPLAN.structured,
    params:
        args=lambda wildcards, input, output: shell_args(
            model=GPLAN.model, masks=input.masks, **GPLAN.shrink_settings(), out=output[0]),
    log:
        f"{R}/logs/gender_shrink/{GMODEL}.log",
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.shrink {params.args} --threads {threads} > {log:q} 2>&1"
