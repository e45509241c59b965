"""At what grain a mask decides: one score per weight, per block, per output unit, per input unit, per attention
head or per output channel of an N-D weight. Orthogonal to the decider (``deciders.py``), which turns the score
tensor into a {0, 1} tile mask; the granularity says how big that score tensor is and how a tile mask spreads over
the weight.

Every granularity has the same three operations on a weight of shape ``(out, in, *rest)``:

* ``score_shape(shape)``: the shape of the score tensor (an error naming the module if the weight does not split);
* ``expand(tiles, shape)``: the weight-shaped mask of a score-shaped one (values repeated over each tile);
* ``pool(values, shape)``: the score-shaped mean of a weight-shaped tensor (e.g. |W| per block for a magnitude
  initialisation); ``pool(expand(x)) == x``.

Config spelling (``parse_granularity``): ``"weight"``, ``"row"`` / ``"channel"`` (an output unit: a row of a
matrix, an output channel of a convolution), ``"column"`` (an input unit), ``[rows, cols]`` (a block of a 2-D
weight; ``[1, 1]`` is per weight), ``{"head": 64}`` (the rows of one head of Q/K/V: a ``64 x in`` block) or
``{"head": 64, "axis": "column"}`` (the columns of one head of the attention output: an ``out x 64`` block).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


class GranularityError(ValueError):
    pass


class Granularity:
    """One score per tile of the weight; subclasses say how tiles are cut."""

    name = "granularity"

    def score_shape(self, shape: tuple[int, ...], where: str = "") -> tuple[int, ...]:
        raise NotImplementedError

    def expand(self, tiles: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        raise NotImplementedError

    def pool(self, values: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        raise NotImplementedError

    def describe(self) -> str | list | dict:
        """The config spelling of this granularity (recorded in mask files)."""
        raise NotImplementedError


class Weight(Granularity):
    """One score per weight: the identity."""

    name = "weight"

    def score_shape(self, shape, where=""):
        return tuple(shape)

    def expand(self, tiles, shape):
        return tiles

    def pool(self, values, shape):
        return values

    def describe(self):
        return "weight"


@dataclass(frozen=True)
class Block(Granularity):
    """``rows x cols`` tiles of a 2-D weight (Linear, Embedding); ``Block(1, 1)`` behaves as ``Weight``."""

    rows: int
    cols: int
    name = "block"

    def __post_init__(self):
        if int(self.rows) < 1 or int(self.cols) < 1:
            raise GranularityError(f"block [{self.rows}, {self.cols}]: sizes must be positive integers")

    def score_shape(self, shape, where=""):
        if len(shape) != 2:
            raise GranularityError(f"{where}: block [{self.rows}, {self.cols}] needs a 2-D weight, got shape "
                                   f"{tuple(shape)} (use 'channel' for convolutions)")
        out_features, in_features = shape
        if out_features % self.rows or in_features % self.cols:
            raise GranularityError(f"{where}: weight {tuple(shape)} does not split into {self.rows}x{self.cols} "
                                   "blocks")
        return out_features // self.rows, in_features // self.cols

    def expand(self, tiles, shape):
        if self.rows == 1 and self.cols == 1:
            return tiles
        return tiles.repeat_interleave(self.rows, dim=0).repeat_interleave(self.cols, dim=1)

    def pool(self, values, shape):
        out_features, in_features = shape
        tiled = values.reshape(out_features // self.rows, self.rows, in_features // self.cols, self.cols)
        return tiled.mean(dim=(1, 3))

    def describe(self):
        return [int(self.rows), int(self.cols)]


@dataclass(frozen=True)
class Units(Granularity):
    """One score per slice along ``dim``: dim 0 = output units (rows of a matrix, output channels of a
    convolution), dim 1 = input units (columns, input channels). The score has shape ``(shape[dim],)``."""

    dim: int = 0

    @property
    def name(self) -> str:  # type: ignore[override]
        return "row" if self.dim == 0 else "column"

    def score_shape(self, shape, where=""):
        if len(shape) < 2:
            raise GranularityError(f"{where}: '{self.name}' needs a weight of at least 2 dimensions, got shape "
                                   f"{tuple(shape)}")
        return (shape[self.dim],)

    def _view_shape(self, shape):
        view = [1] * len(shape)
        view[self.dim] = shape[self.dim]
        return view

    def expand(self, tiles, shape):
        return tiles.reshape(self._view_shape(shape)).expand(*shape)

    def pool(self, values, shape):
        dims = tuple(d for d in range(len(shape)) if d != self.dim)
        return values.mean(dim=dims)

    def describe(self):
        return self.name


@dataclass(frozen=True)
class Head(Granularity):
    """The slice of one attention head: ``size`` rows of Q/K/V (``axis="row"``), or ``size`` columns of the
    attention output (``axis="column"``) — a block as tall (or wide) as the head and as wide (tall) as the
    matrix."""

    size: int
    axis: str = "row"
    name = "head"

    def __post_init__(self):
        if int(self.size) < 1 or self.axis not in ("row", "column"):
            raise GranularityError(f"head: size must be a positive integer and axis 'row' or 'column', got "
                                   f"{self.size}, {self.axis!r}")

    def block(self, shape, where="") -> Block:
        if len(shape) != 2:
            raise GranularityError(f"{where}: 'head' needs a 2-D weight, got shape {tuple(shape)}")
        return Block(self.size, shape[1]) if self.axis == "row" else Block(shape[0], self.size)

    def score_shape(self, shape, where=""):
        return self.block(shape, where).score_shape(shape, where)

    def expand(self, tiles, shape):
        return self.block(shape).expand(tiles, shape)

    def pool(self, values, shape):
        return self.block(shape).pool(values, shape)

    def describe(self):
        return {"head": int(self.size), "axis": self.axis}


def parse_granularity(value, where: str = "granularity") -> Granularity:
    """A granularity from its config spelling (see the module docstring)."""
    if isinstance(value, Granularity):
        return value
    if value == "weight":
        return Weight()
    if value in ("row", "channel"):
        return Units(0)
    if value == "column":
        return Units(1)
    try:
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
            rows, cols = value
            return Weight() if (rows, cols) == (1, 1) else Block(rows, cols)
        if isinstance(value, dict) and set(value) <= {"head", "axis"} and "head" in value:
            return Head(int(value["head"]), value.get("axis", "row"))
    except GranularityError as err:
        raise GranularityError(f"{where}: {err}") from err
    raise GranularityError(f"{where}: {value!r} is not a granularity; use 'weight', 'row', 'channel', 'column', "
                           "[rows, cols] or {head: size, axis: row|column}")


def granularity_for(kind: str, plan: dict, where: str = "granularity") -> Granularity:
    """The granularity of a module of ``kind`` under a per-kind ``plan`` ({kind: spelling, "default": ...})."""
    if kind in plan:
        return parse_granularity(plan[kind], f"{where}.{kind}")
    return parse_granularity(plan.get("default", "weight"), f"{where}.default")
