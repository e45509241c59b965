"""The vision track's README section: structured subnetworks as smaller dense models."""

from __future__ import annotations


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
