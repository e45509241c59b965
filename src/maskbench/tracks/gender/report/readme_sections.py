"""The gender track's README sections: what a run is on (its caption), masks as smaller dense encoders."""

from __future__ import annotations

from collections.abc import Mapping

from maskbench.report.captions import REAL, caption, data_kind, model_text


def corpus_source(corpus: Mapping) -> str:
    """The corpus's source: gender.corpus.source, or its dataset's source."""
    return str(corpus["dataset"]["source"] if corpus["source"] == "dataset" else corpus["source"])


def sample_text(spec: Mapping) -> str:
    """The size a task split's config asks for: ``n`` examples, a sample per label, or the whole split."""
    sample = spec.get("sample") or {}
    if sample:
        return f"{int(sample['n']):,} per {sample.get('per', 'label')}" if sample.get("per") else f"{int(sample['n']):,}"
    return f"{int(spec['n']):,}" if spec.get("n") else "whole split"


def data_caption(config: Mapping, config_path: str, corpus_rows: int | None = None) -> str:
    """The gender track's caption, from its config (and the prepared corpus's row count when known): the corpus,
    SEAT's word lists, the masked-LM bias sets, the tasks of the performance column (kind, source, size), the model,
    the seeds and the config."""
    gender = config["gender"]
    corpus = corpus_source(gender["corpus"])
    kinds = {data_kind(corpus), REAL}  # SEAT's word lists are real
    size = f"{corpus_rows:,} sentences" if corpus_rows is not None else "size as prepared"
    parts = [f"corpus {size} ({data_kind(corpus)}, `{corpus}`; {int(gender['corpus'].get('heldout', 1000)):,} held out)",
             f"SEAT {', '.join(gender['seat']['tests'])} (real, the shipped word lists)"]
    crows = (gender.get("lm_bias") or {}).get("crows_pairs")
    if crows:
        pairs = int(crows.get("max_pairs", 0))
        parts.append(f"CrowS-Pairs {'all pairs' if pairs == 0 else f'{pairs:,} pairs'} (real, `{crows['file']}`)")
        kinds.add(REAL)
    if (gender.get("lm_bias") or {}).get("stereoset"):
        parts.append("StereoSet (real, the Hub)")
    for task, spec in ((gender.get("performance") or {}).get("tasks") or {}).items():
        train, dev = spec["train"], spec["dev"]
        kind = data_kind(str(train["source"]))
        kinds.add(kind)
        parts.append(f"task {task} train {sample_text(train)} / dev {sample_text(dev)} ({kind}, `{train['source']}`)")
    return caption(kinds, parts, model_text(gender["model"]), config, config_path)


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
