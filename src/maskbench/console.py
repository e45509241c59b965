"""The maskbench command: search a debiasing mask for your model, evaluate and predict with or without it, inspect
it, and export the masked model as a plain Hugging Face folder.

    maskbench search   --model CKPT --train train.parquet --dev dev.parquet --loss reweight --bias-probs b.parquet \\
                       --output my.mask
    maskbench evaluate --model CKPT --mask my.mask --data dev.parquet hans.parquet --output-dir eval/masked
    maskbench predict  --model CKPT --mask my.mask --input pairs.jsonl
    maskbench inspect  my.mask
    maskbench inspect  --check results/default/nlu/mnli/*/masks/*/*/*/seed~1.mask
    maskbench export   --model CKPT --mask my.mask --output-dir exported/ --evaluation eval/masked/*.json

Each subcommand is a thin front to maskbench's Python API (maskbench/api.py), the same library code the workflow's
steps run. `maskbench <subcommand> --help` explains its arguments. A bad input ends it with one line naming the
file, field and value, and exit status 1; a usage error exits with 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from maskbench import __version__, errors

EPILOG = "Masks are .mask files (maskbench/masking/codec.py); checkpoints are folders with model.safetensors, " \
         "config.json and a tokenizer; prepared data are parquets (docs/data.md)."


def _model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", "--model-name-or-path", dest="model", type=Path, required=True,
                        help="the fine-tuned sequence-classification checkpoint folder (model.safetensors, "
                             "config.json, tokenizer)")


def _runtime(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] (default: auto)")


def _json_list(text: str) -> list:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON ({err.msg}): {text!r:.80}") from err
    if not isinstance(value, list) or not all(isinstance(v, dict) and "name" in v for v in value):
        raise argparse.ArgumentTypeError(f"expected a JSON list of {{name, metric, merge}} objects, got {text!r:.80}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="maskbench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--version", action="version", version=f"maskbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    search = sub.add_parser("search", help="search a pruning mask on a frozen fine-tuned model", epilog=EPILOG,
                            description="Search a binary pruning mask on a frozen fine-tuned classifier with the "
                                        "workflow's engine and objectives (paper A's movement scores; only the "
                                        "scores train, every weight stays as it was). Writes the mask and a JSON "
                                        "summary (<output>.search.json).")
    _model(search)
    search.add_argument("--train", type=Path, required=True, help="prepared training parquet")
    search.add_argument("--dev", type=Path, help="prepared ID dev parquet, scored after each epoch")
    search.add_argument("--output", "--output-file", dest="output", type=Path, required=True,
                        help="the mask file to write (.mask)")
    search.add_argument("--summary", type=Path, help="JSON summary (default: <output>.search.json)")
    search.add_argument("--config", type=Path, help="a workflow config file (YAML): its mask_search section "
                                                    "(method, modules, thresholds, hparams, score_learning_rate)")
    search.add_argument("--loss", default="ce", help="objective of maskbench.objectives.losses: ce (no debiasing), "
                                                     "reweight, poe, ... (default: ce)")
    search.add_argument("--bias-probs", type=Path, help="the bias model's probabilities of the training set "
                                                        "(parquet: id, prob_<label>...), for reweight / poe")
    search.add_argument("--teacher-probs", type=Path, help="a teacher's probabilities of the training set")
    search.add_argument("--seed", type=int, default=1, help="fixes data order and dropout (default: 1)")
    search.add_argument("--epochs", type=float, help="epochs of score training (overrides the config)")
    search.add_argument("--batch-size", type=int, help="training batch size (overrides the config)")
    search.add_argument("--learning-rate", type=float, help="the scores' learning rate (overrides the config)")
    _runtime(search)

    evaluate = sub.add_parser("evaluate", help="score a model, with or without a mask, on evaluation sets",
                              epilog=EPILOG, description="Score a model (under --mask, if given) on prepared "
                              "evaluation parquets; write <output-dir>/<set>.json (metrics) and "
                              "<set>.predictions.parquet per set, as the workflow's evaluation does.")
    _model(evaluate)
    evaluate.add_argument("--mask", type=Path, help="a mask file searched on --model (default: no mask)")
    evaluate.add_argument("--data", type=Path, nargs="+", required=True, help="prepared evaluation parquets")
    evaluate.add_argument("--eval-sets", type=_json_list, help="JSON list of {name, metric, merge}, one per --data file (default: "
                                              "the file's stem, metric accuracy)")
    evaluate.add_argument("--output-dir", type=Path, required=True, help="where the JSONs and predictions go")
    evaluate.add_argument("--seed", type=int, default=-1, help="the model's seed, recorded (default: -1)")
    evaluate.add_argument("--batch-size", type=int, default=256, help="evaluation batch size (default: 256)")
    evaluate.add_argument("--max-length", type=int, default=128, help="truncation length (default: 128)")
    _runtime(evaluate)

    predict = sub.add_parser("predict", help="predict labels of text pairs, with or without masks", epilog=EPILOG,
                             description="Predict the text pairs of a JSON Lines file (text_a/text_b, "
                             "premise/hypothesis, question1/question2 or evidence/claim; an id is kept) with the "
                             "unmasked model and under each --mask, switching masks without reloading weights.")
    _model(predict)
    predict.add_argument("--input", type=Path, required=True, help="JSON Lines of text pairs")
    predict.add_argument("--mask", type=Path, nargs="+", default=[], help="mask files to predict under")
    predict.add_argument("--output", "--output-file", dest="output", type=Path,
                         help="JSON Lines to write (default: stdout)")
    predict.add_argument("--no-unmasked", action="store_true", help="leave the unmasked model out")
    predict.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64)")
    predict.add_argument("--max-length", type=int, default=128, help="truncation length (default: 128)")
    _runtime(predict)

    inspect = sub.add_parser("inspect", help="print a mask's density per layer and module kind", epilog=EPILOG,
                             description="Check a mask file (checksums, decoding) and print its density per module "
                             "(layer, kind), per module kind and per layer. Several files are checked in turn, "
                             "then counted; the exit status is 1 when any is not sound.")
    inspect.add_argument("mask", type=Path, nargs="+", help="the mask file(s)")
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of tables (one file)")
    inspect.add_argument("--check", action="store_true",
                         help="only check: per module its shape, encoding, payload bytes, density and OK, the "
                         "densities the header records included")

    export = sub.add_parser("export", help="export the masked model as a Hugging Face folder", epilog=EPILOG,
                            description="Write --model with --mask folded into its weights to --output-dir: "
                            "config.json, tokenizer, model.safetensors, a model card (README.md) and "
                            "maskbench_export.json. It loads with transformers' "
                            "AutoModelForSequenceClassification.from_pretrained alone and predicts what the masked "
                            "model predicts. FFN neurons that every layer can lose are removed (intermediate_size "
                            "shrinks); emptied attention heads stay as zeros (one config gives every layer one "
                            "head count).")
    _model(export)
    export.add_argument("--mask", type=Path, required=True, help="a mask file searched on --model")
    export.add_argument("--output-dir", type=Path, required=True, help="the folder to write (must be empty or "
                                                                        "absent unless --overwrite)")
    export.add_argument("--overwrite", action="store_true", help="replace a non-empty --output-dir")
    export.add_argument("--keep-units", action="store_true", help="remove no neuron: only zero the masked weights "
                                                                  "(logits bit-equal to the masked model's)")
    export.add_argument("--evaluation", type=Path, nargs="+", default=[],
                        help="evaluation JSONs of the masked model (maskbench evaluate --mask; one per seed) for "
                             "the card's measured effects")
    export.add_argument("--baseline-evaluation", type=Path, nargs="+", default=[],
                        help="evaluation JSONs of the unmasked model, for the change the mask makes")
    export.add_argument("--id-sets", nargs="+", help="the in-distribution evaluation sets (default: a set named "
                                                     "dev or *_dev; the others count as OOD)")
    export.add_argument("--base-model", help="the base model, as the card names it (default: the checkpoint a workflow took in, else --model)")
    export.add_argument("--data-description", help="the training data, as the card names it")
    export.add_argument("--bias-description", help="the bias, as the card names it")
    return parser


# ------------------------------------------------------------------------------------------------ subcommands
def run_search(args: argparse.Namespace) -> int:
    from maskbench.api import search_mask
    from maskbench.config_files import read_configs

    section = read_configs([args.config]).get("mask_search") if args.config else None
    section = dict(section or {})
    overrides = {k: v for k, v in (("epochs", args.epochs), ("batch_size", args.batch_size)) if v is not None}
    if overrides:
        section["hparams"] = {**section.get("hparams", {}), **overrides}
    if args.learning_rate is not None:
        section["score_learning_rate"] = args.learning_rate
    check_search_settings(section, args)
    mask_set, summary = search_mask(args.model, args.train, args.output, dev=args.dev, loss=args.loss,
                                    bias_probs=args.bias_probs, teacher_probs=args.teacher_probs, seed=args.seed,
                                    mask_search=section or None, summary=args.summary, threads=args.threads,
                                    device=args.device)
    print(f"{args.output}: {summary['pruned_percent']:.2f}% pruned, dev accuracy {summary['final_dev_accuracy']}")
    return 0


def check_search_settings(section: dict, args: argparse.Namespace) -> None:
    """A config file's mask_search section and the loss, checked before any data or model is read: one line naming
    the file, field and value (the workflow's schema does this for its own runs)."""
    from maskbench.data.schema import DataError
    from maskbench.objectives.losses import LOSSES
    from maskbench.tracks.nlu.mask_search_run import search_settings
    from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec
    from maskbench.training.hparams import parse_hparams

    if args.loss not in LOSSES:
        raise DataError(f"--loss: field 'loss' is {args.loss!r}, not one of {sorted(LOSSES)}")
    spec, hparams = search_settings(section or None)
    try:
        MaskSearchSpec.from_dict(spec)
        parse_hparams(json.dumps(hparams))
    except (TypeError, ValueError) as err:
        raise DataError(f"{args.config or 'the search settings'}: field mask_search: {err}") from err


def run_evaluate(args: argparse.Namespace) -> int:
    from maskbench.api import evaluate_model

    written = evaluate_model(args.model, args.data, args.output_dir, mask=args.mask, eval_sets=args.eval_sets,
                             max_length=args.max_length, batch_size=args.batch_size, seed=args.seed,
                             threads=args.threads, device=args.device)
    for path in written:
        record = json.loads(Path(path).read_text())
        print(f"{record['eval_set']}: accuracy {record['metrics']['accuracy']:.2f} ({path})")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    from maskbench import runtime
    from maskbench.api import predict
    from maskbench.text.pair_predictions import records_text

    runtime.set_threads(args.threads)
    records = predict(args.model, args.input, args.mask, unmasked=not args.no_unmasked,
                      max_length=args.max_length, batch_size=args.batch_size, device=args.device)
    if args.output is None:
        sys.stdout.write(records_text(records))
    else:
        runtime.atomic_write_text(args.output, records_text(records))
        print(f"wrote {len(records)} predictions x {len(records[0]) - 1} variants to {args.output}", file=sys.stderr)
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    if args.json and (len(args.mask) > 1 or args.check):
        print("maskbench inspect: error: --json prints the tables of one mask file (without --check)", file=sys.stderr)
        return 2
    if len(args.mask) == 1 and not args.check:
        return inspect_file(args.mask[0], args.json)
    failed = 0
    for path in args.mask:
        try:
            check_mask_file(path) if args.check else inspect_file(path)
        except Exception as err:
            if not (errors.is_user_error(err) or isinstance(err, OSError)):
                raise
            failed += 1
            print(f"maskbench inspect: error: {errors.one_line(err)}", file=sys.stderr)
    if len(args.mask) > 1:
        print(f"{len(args.mask) - failed} of {len(args.mask)} mask files OK")
    return 1 if failed else 0


def inspect_file(path: Path, as_json: bool = False) -> int:
    """Print one mask file's density per module, per module kind and per layer (or one JSON object)."""
    from maskbench.api import inspect_mask, load_mask

    mask_set = load_mask(path)
    table = inspect_mask(mask_set)
    by_kind = table.groupby("kind", sort=False)[["n_weights", "n_kept"]].sum()
    by_layer = table.dropna(subset=["layer"]).groupby("layer")[["n_weights", "n_kept"]].sum()
    if as_json:
        print(json.dumps({"mask": str(path), "density": mask_set.density(),
                          "by_kind": {k: r.n_kept / r.n_weights for k, r in by_kind.iterrows()},
                          "by_layer": {int(k): r.n_kept / r.n_weights for k, r in by_layer.iterrows()},
                          "modules": {r.module: r.density for r in table.itertuples()}}, indent=1))
        return 0
    meta = mask_set.meta
    print(f"{path}: {len(table)} modules, density {mask_set.density():.4f} (method {meta.get('method', '?')}, "
          f"loss {meta.get('loss', '?')}, seed {meta.get('seed', '?')})")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("\nby module kind:")
    for kind, row in by_kind.iterrows():
        print(f"  {kind:<18} {row.n_kept / row.n_weights:.4f}")
    print("by layer:")
    for layer, row in by_layer.iterrows():
        print(f"  {int(layer):<18} {row.n_kept / row.n_weights:.4f}")
    return 0


# the recorded densities (`MaskSet.save`) are floats of the same counts: they agree to rounding
_DENSITY_TOLERANCE = 1e-9


def check_mask_file(path: Path, out=None) -> None:
    """Check one mask file the way every step reads it (`maskbench.masking.codec.read_mask_file`: the header's
    sha256, each module's CRC32, then its decoding; the densities the header records must agree) and print, per
    module, its shape, encoding, payload bytes, density and OK (to ``out``, default stdout); raise MaskFileError
    when it is damaged or inconsistent."""
    import math

    from maskbench.masking.codec import MaskFileError, read_mask_file, read_mask_header
    from maskbench.masking.density import density, module_density

    out = out or sys.stdout
    masks, meta = read_mask_file(path)
    modules = {m["name"]: m for m in read_mask_header(path)["modules"]}
    recorded = meta.get("module_density") or {}
    densities = module_density(masks)
    for name, value in densities.items():
        expected = recorded.get(name)
        if isinstance(expected, float) and not (math.isnan(value) or abs(expected - value) <= _DENSITY_TOLERANCE):
            raise MaskFileError(f"{path}: module {name!r}: density {value:.6f} but the header records {expected:.6f}")
    what = ", ".join(f"{key} {meta[key]}" for key in ("method", "loss", "seed") if key in meta)
    print(f"{path}: OK — {len(masks)} modules, density {density(masks):.4f}, {path.stat().st_size} bytes"
          + (f" ({what})" if what else ""), file=out)
    width = max((len(name) for name in masks), default=0)
    for name, value in densities.items():
        entry = modules[name]
        shape = "x".join(map(str, entry["shape"])) or "scalar"
        print(f"  {name:<{width}}  {shape:>11}  {entry['encoding']:<8} {entry['nbytes']:>9} B  "
              f"density {value:.4f}  OK", file=out)


def run_export(args: argparse.Namespace) -> int:
    from maskbench.api import export_model

    result = export_model(args.model, args.mask, args.output_dir, overwrite=args.overwrite,
                          remove_units=not args.keep_units, evaluations=args.evaluation,
                          baseline_evaluations=args.baseline_evaluation, id_sets=args.id_sets,
                          base_model=args.base_model, data=args.data_description, bias=args.bias_description)
    size = result.intermediate_size
    print(f"{result.folder}: density {result.density:.4f}, "
          + (f"FFN width {size[0]} -> {size[1]}" if size and size[0] != size[1] else "no unit removed")
          + f", mask sha256 {result.mask_sha256[:16]}…")
    return 0


COMMANDS = {"search": run_search, "evaluate": run_evaluate, "predict": run_predict, "inspect": run_inspect,
            "export": run_export}


def main(argv: list[str] | None = None) -> int:
    """The console script (pyproject ``[project.scripts]``): a bad input is one line on stderr and exit status 1."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except Exception as err:
        # a missing file or folder the user named is an input error too, not a bug
        if not (errors.is_user_error(err) or isinstance(err, OSError)):
            raise
        print(f"maskbench {args.command}: error: {errors.one_line(err)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
