# The login node's download of what a config reads from the network (docs/cluster.md, "Offline compute nodes").
# FETCH_CONFIGFILES: the config files snakemake was given (rules/common.smk).


# `snakemake --configfile <config> fetch`: the login-node download of everything the config reads from the network
# (python -m maskbench.steps fetch; docs/cluster.md, "Offline compute nodes") as a target; a localrule, never a
# cluster job. It reads the config files given (or the embedded config.yaml), not --config overrides.
rule fetch:
    output:
        f"{R}/fetch.lock.json",
    params:
        args=lambda wildcards, output: shell_args(configfile=FETCH_CONFIGFILES, lock=output[0]),
    log:
        f"{R}/logs/fetch/fetch.log",
    localrule: True
    conda:
        "../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps fetch {params.args} > {log:q} 2>&1"
