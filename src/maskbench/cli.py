"""Turn an entry point's typed argument dataclass into an argparse command line."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import shlex
import sys
import typing
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_SCALARS = {"int": int, "float": float, "str": str, "Path": Path}


def _scalar_type(annotation: str):
    # annotations arrive as strings (from __future__ import annotations): "int", "Path | None", "list[str]"
    base = annotation.replace(" | None", "").replace("Optional[", "").rstrip("]")
    if base.startswith("list["):
        return _SCALARS.get(base[5:], str), True
    return _SCALARS.get(base, str), False


def truth_value(text: str) -> bool:
    """A bool option's value: true / false in any case (``--length-sorted False``); anything else is refused, so
    that the word "False" can never read as a true (non-empty) string."""
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def parse_dataclass(cls: type[T], argv: list[str] | None, prog: str, description: str = "") -> T:
    """Every field becomes ``--field-name``; fields without a default are required; list fields take nargs; a bool
    field is a flag that also takes a value (``--flag``, ``--flag true``, ``--flag False``); a field with
    ``metadata["choices"]`` refuses any other value as it is parsed; ``metadata["parse"]`` turns a field's text into
    its value (a JSON argument into a dict), a ValueError it raises the command line's one-line usage error."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for f in dataclasses.fields(cls):
        annotation = f.type if isinstance(f.type, str) else typing.get_type_hints(cls)[f.name].__name__
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = None if required else (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
        flag = "--" + f.name.replace("_", "-")
        if annotation == "bool":
            parser.add_argument(flag, dest=f.name, type=truth_value, nargs="?", const=True, required=required,
                                default=default, help=f.metadata.get("help"))
            continue
        kind, many = _scalar_type(annotation)
        if "parse" in f.metadata:
            kind = _usage_errors(f.metadata["parse"])
        parser.add_argument(flag, dest=f.name, type=kind, required=required, choices=f.metadata.get("choices"),
                            default=default, nargs="+" if many else None, help=f.metadata.get("help"))
    return cls(**vars(parser.parse_args(argv)))


def _usage_errors(parse):
    """``parse`` with its ValueError's message kept as argparse's (which would otherwise print "invalid value")."""

    @functools.wraps(parse)
    def parsed(text: str):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from err

    return parsed


def require_same_lengths(**lists: list) -> None:
    """Parallel list arguments (one entry per model, mask or row) must line up."""
    if len({len(v) for v in lists.values()}) > 1:
        sizes = ", ".join(f"--{k.replace('_', '-')} ({len(v)})" for k, v in lists.items())
        raise ValueError(f"{sizes} must have the same length")


def setup_logging() -> None:
    """Log lines go to stderr, which every rule redirects into its log file."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)


class Json:
    """A value a step reads as one JSON argument (`--words '["a", "b"]'`); a dict is JSON without it."""

    def __init__(self, value):
        self.value = value


def shell_args(**values) -> str:
    """A step's command-line options from typed values, the one place a rule's settings become shell words: key
    `max_length` -> `--max-length`; a dict or a `Json` -> one JSON argument; a list or tuple -> one word per item
    (nargs); True -> the bare flag; None, False and an empty list -> left out (a bare nargs flag is an argparse
    error); anything else -> its `str`. Every word is shell-quoted, so a path with spaces stays one word."""
    words: list[str] = []
    for key, value in values.items():
        if value is None or value is False or (isinstance(value, list | tuple) and not value):
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, Json | dict):
            words += [flag, shlex.quote(json.dumps(value.value if isinstance(value, Json) else value))]
        elif isinstance(value, list | tuple):
            words += [flag, *(shlex.quote(str(v)) for v in value)]
        else:
            words += [flag, shlex.quote(str(value))]
    return " ".join(words)
