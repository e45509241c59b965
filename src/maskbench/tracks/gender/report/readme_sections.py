"""The gender track's README section: masks as smaller dense encoders."""

from __future__ import annotations


def shrunk_encoders_markdown(bench: dict) -> str:
    """Gender-track masks as smaller dense encoders (results/benchmarks/structured.json): heads and FFN neurons
    removed, parameters, median one-process CPU latency and the largest hidden-state difference, one line per mask."""
    lines = [f"Batch {bench['batch']} × {bench['length']} tokens, {bench['threads'] or 'default'} torch thread(s), "
             f"dense and shrunk alternating over {bench['rounds']} rounds of {bench['repeats']} passes.", "",
             "| mask | heads removed | FFN neurons removed | params dense → shrunk (ratio) | CPU latency dense → shrunk, "
             "median (ratio) | max abs diff float32 / float64 |", "|---|---:|---:|---|---|---:|"]
    for rec in bench["records"]:
        short = rec["mask"].split("/gender/", 1)[-1].split("/", 1)[-1]  # <granularity>/layers~/mode~/seed~.mask
        lines.append(f"| `{short}` | {rec['heads_removed']} / {rec['heads_total']} | "
                     f"{rec['ffn_removed']:,} / {rec['ffn_total']:,} | {rec['params_dense']:,} → "
                     f"{rec['params_shrunk']:,} ({rec['params_ratio']:.3f}) | {1000 * rec['latency_dense_s']:.0f} → "
                     f"{1000 * rec['latency_shrunk_s']:.0f} ms ({rec['latency_ratio']:.3f}) | "
                     f"{rec['max_abs_diff']:.1e} / {rec['max_abs_diff_float64']:.1e} |")
    return "\n".join(lines)
