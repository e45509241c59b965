"""The vision track's README sections: what a run is on (its caption), structured subnetworks as smaller dense
models."""

from __future__ import annotations

from collections.abc import Mapping

from maskbench.report.captions import REAL, STAND_IN, caption, data_kind

STANDIN_SUFFIX = "_standin"  # a generator that stands in for a dataset of paper D's it does not have


def dataset_text(name: str, spec: Mapping, mnist: str) -> tuple[str, str]:
    """(kind, text) of one vision dataset: a stand-in (its generator ends in ``_standin``), or real (its own
    ``source``, or the MNIST digits with the bias built as paper D builds it); its paper D table and split sizes."""
    standin = str(spec["generator"]).endswith(STANDIN_SUFFIX)
    if spec.get("source"):
        where = f"{data_kind(str(spec['source']))}, `{spec['source']}`"
    else:
        where = f"MNIST digits `{mnist}`, bias generated"
    kind = STAND_IN if standin else REAL
    sizes = spec.get("sizes")
    size_text = " / ".join(f"{split.replace('_', ' ')} {int(n):,}" for split, n in sizes.items()) if sizes else \
        "full splits"
    label = f"stand-in for paper D's Table {spec['table']} dataset" if standin else f"paper D Table {spec['table']}"
    return kind, f"{name} ({label}; {where}; {len(spec['levels'])} level(s); {size_text})"


def data_caption(config: Mapping, config_path: str) -> str:
    """The vision track's caption, from its config: every dataset (real or stand-in, its source, sizes), the
    models, the seeds and the config."""
    vision = config["vision"]
    mnist = (vision.get("mnist") or {}).get("source", "?")
    described = [dataset_text(name, spec, mnist) for name, spec in vision["datasets"].items()]
    models = "; ".join(f"{name} ({spec['arch']}" + "".join(f", {k} {v}" for k, v in (spec.get("kwargs") or {}).items())
                       + ", trained from scratch)" for name, spec in vision["models"].items())
    return caption({kind for kind, _ in described}, [text for _, text in described], models, config, config_path)


def shrunk_models_markdown(records: list[dict]) -> str:
    """Structured subnetworks as smaller dense models (results/benchmarks/vision_structured.json): parameters,
    median CPU latency and the largest logit difference, one line per mask."""
    lines = ["| mask | params dense → shrunk (ratio) | CPU latency dense → shrunk, median (ratio) | batch | "
             "max abs logit diff |", "|---|---|---|---:|---:|"]
    for rec in records:
        short = rec["mask"].split("/vision/", 1)[-1]  # <dataset>/<level>/masks/...
        lines.append(f"| `{short}` | {rec['params_dense']:,} → {rec['params_shrunk']:,} ({rec['params_ratio']:.3f}) | "
                     f"{1000 * rec['latency_dense_s']:.2f} → {1000 * rec['latency_shrunk_s']:.2f} ms "
                     f"({rec['latency_ratio']:.3f}) | {rec['batch']} | {rec['max_abs_logit_diff']:.1e} |")
    return "\n".join(lines)
