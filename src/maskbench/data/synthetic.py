"""The project's own shortcut benchmark: three synthetic tasks that mirror paper A's.

Each task has a *true* label that is a deterministic function of the text (who did what to whom, whether a
clause is asserted, whether the evidence states the claimed value) and a *shortcut* that predicts the label
on most training examples but not on the out-of-distribution (OOD) sets:

* ``nli``: lexical overlap suggests entailment (as in HANS), a negation word suggests contradiction (as in
  MNLI's hypothesis-only bias). Splits ``train``/``dev`` (ID), ``hans`` (every pair has high overlap, half of
  them are not entailed; columns ``heuristic``/``subcase``) and ``negation_pool`` (negated hypotheses, half of
  them entailed; the negation-subset rule cuts paper A's "Neg." set from it).
* ``paraphrase``: high overlap suggests a duplicate (as in QQP); ``paws`` holds high-overlap pairs of which
  about 31% are paraphrases, like PAWS-QQP.
* ``fact``: a cue in the claim alone predicts the label (as in FEVER); ``symmetric`` pairs every claim with
  one supporting and one refuting evidence, like FEVER-Symmetric, so the cue carries no information there.

``rho`` is the fraction of bias-aligned examples in ``train``/``dev``; the remaining ``1 - rho`` are
bias-conflicting and are what a model needs to learn the true rule. Generation is deterministic for a given
``(generator, split, n, seed, rho)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

PEOPLE = (
    "doctor lawyer artist banker judge student teacher senator actor author manager tourist athlete "
    "secretary professor president scientist dancer singer farmer pilot chef nurse poet soldier clerk "
    "baker sailor painter writer"
).split()

# (base, past) — past tense and participle coincide, so active and passive sentences share the verb form.
VERBS = [
    ("pay", "paid"), ("help", "helped"), ("call", "called"), ("thank", "thanked"), ("admire", "admired"),
    ("avoid", "avoided"), ("recognize", "recognized"), ("advise", "advised"), ("contact", "contacted"),
    ("support", "supported"), ("introduce", "introduced"), ("mention", "mentioned"),
    ("encourage", "encouraged"), ("visit", "visited"), ("stop", "stopped"), ("meet", "met"),
    ("follow", "followed"), ("invite", "invited"), ("watch", "watched"), ("praise", "praised"),
]
# a paraphrase verb for each verb above (same index)
SYNONYMS = [
    ("compensate", "compensated"), ("assist", "assisted"), ("phone", "phoned"), ("credit", "credited"),
    ("respect", "respected"), ("evade", "evaded"), ("identify", "identified"), ("counsel", "counselled"),
    ("reach", "reached"), ("back", "backed"), ("present", "presented"), ("cite", "cited"),
    ("motivate", "motivated"), ("see", "seen"), ("halt", "halted"), ("encounter", "encountered"),
    ("trail", "trailed"), ("summon", "summoned"), ("observe", "observed"), ("commend", "commended"),
]
# symmetric predicates: swapping the two people keeps the meaning
SYMMETRIC_VERBS = "argue meet quarrel collaborate dance talk negotiate compete".split()
INTRANSITIVE = "slept danced waited arrived left smiled shouted laughed resigned ran".split()
PLACES = (
    "in the park|at the station|near the library|by the river|in the office|at the market|"
    "in the garden|at the museum"
).split("|")

NAMES = (
    "anna boris clara dmitri elena farid greta hugo irene jonas kira lars mila nadia oskar pavel "
    "rosa sven tamara ulrich vera walter yana zoltan"
).split()
CITIES = "paris rome berlin madrid vienna prague lisbon dublin oslo warsaw athens cairo".split()
INSTRUMENTS = "piano violin guitar cello flute drums trumpet harp".split()
LANGUAGES = "french german spanish italian polish greek arabic dutch".split()

NLI_LABELS = ["entailment", "neutral", "contradiction"]
HANS_LABELS = ["entailment", "non-entailment"]
PARAPHRASE_LABELS = ["not_duplicate", "duplicate"]
FACT_LABELS = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
SYMMETRIC_LABELS = ["SUPPORTS", "REFUTES"]


@dataclass(frozen=True)
class Example:
    text_a: str
    text_b: str
    label: str
    case: str
    heuristic: str = ""
    bias_aligned: bool = True


def _rng(generator: str, split: str, seed: int) -> np.random.Generator:
    # a stable hash (not Python's salted hash()) so that every process draws the same data
    digest = hashlib.sha256(f"{generator}/{split}/{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _pick(rng: np.random.Generator, items, k: int = 1):
    idx = rng.choice(len(items), size=k, replace=False)
    return [items[i] for i in idx] if k > 1 else items[idx[0]]


# --------------------------------------------------------------------------------------------- NLI
def _nli_parts(rng):
    n1, n2, n3, n4 = _pick(rng, PEOPLE, 4)
    vi = int(rng.integers(len(VERBS)))
    vj = int((vi + 1 + rng.integers(len(VERBS) - 1)) % len(VERBS))
    p1, p2 = _pick(rng, PLACES, 2)
    return n1, n2, n3, n4, VERBS[vi], VERBS[vj], p1, p2, _pick(rng, INTRANSITIVE)


def _nli_case(rng, case: str) -> Example:
    n1, n2, n3, n4, (vb, vp), (wb, wp), p1, p2, vint = _nli_parts(rng)
    e, n, c = NLI_LABELS
    cases: dict[str, tuple[str, str, str, str]] = {
        # high overlap, entailed (overlap-aligned)
        "ent_drop_place": (f"the {n1} {vp} the {n2} {p1}", f"the {n1} {vp} the {n2}", e, "subsequence"),
        "ent_passive": (f"the {n2} was {vp} by the {n1}", f"the {n1} {vp} the {n2}", e, "lexical_overlap"),
        "ent_conjunction": (f"the {n1} and the {n3} {vp} the {n2}", f"the {n3} {vp} the {n2}", e, "subsequence"),
        "ent_since_clause": (f"since the {n1} {vp} the {n2} , the {n3} {vint}", f"the {n1} {vp} the {n2}", e, "constituent"),
        # high overlap, not entailed (overlap-conflicting)
        "swap_roles": (f"the {n1} {vp} the {n2} {p1}", f"the {n2} {vp} the {n1}", n, "lexical_overlap"),
        "passive_swap": (f"the {n2} was {vp} by the {n1}", f"the {n2} {vp} the {n1}", n, "lexical_overlap"),
        "near_subject": (f"the {n1} near the {n3} {vp} the {n2}", f"the {n3} {vp} the {n2}", n, "subsequence"),
        "if_clause": (f"if the {n1} {vp} the {n2} , the {n3} {vint}", f"the {n1} {vp} the {n2}", n, "constituent"),
        "other_place": (f"the {n1} {vp} the {n2} {p1}", f"the {n1} {vp} the {n2} {p2}", c, "lexical_overlap"),
        # low overlap, not entailed (overlap-aligned)
        "unrelated": (f"the {n1} {vp} the {n2} {p1}", f"the {n3} {wp} the {n4}", n, ""),
        "other_verb": (f"the {n1} {vp} the {n2} {p1}", f"the {n1} {wp} the {n4}", n, ""),
        # negation in the hypothesis, contradiction (negation-aligned)
        "neg_contradiction": (f"the {n1} {vp} the {n2} {p1}", f"the {n1} did not {vb} the {n2}", c, ""),
        "never_contradiction": (f"the {n1} {vp} the {n2} {p1}", f"the {n1} never {vp} the {n2}", c, ""),
        "managed_contradiction": (f"the {n1} managed to {vb} the {n2} {p1}", f"the {n1} did not {vb} the {n2}", c, ""),
        # implicative verbs without negation in the hypothesis: 'refused to'/'failed to' are no entailment cue
        "refused_contradiction": (f"the {n1} refused to {vb} the {n2} {p1}", f"the {n1} {vp} the {n2}", c, ""),
        "failed_contradiction": (f"the {n1} failed to {vb} the {n2} {p1}", f"the {n1} {vp} the {n2}", c, ""),
        "managed_entailment": (f"the {n1} managed to {vb} the {n2} {p1}", f"the {n1} {vp} the {n2}", e, ""),
        # negation in the hypothesis, but entailed (the premise's implicative verb) or neutral (negation-conflicting)
        "refused_entailment": (f"the {n1} refused to {vb} the {n2} {p1}", f"the {n1} did not {vb} the {n2}", e, ""),
        "failed_entailment": (f"the {n1} failed to {vb} the {n2} {p1}", f"the {n1} did not {vb} the {n2}", e, ""),
        "neg_neutral": (f"the {n1} {vp} the {n2} {p1}", f"the {n3} did not {wb} the {n4}", n, ""),
    }
    premise, hypothesis, label, heuristic = cases[case]
    return Example(premise, hypothesis, label, case, heuristic)


NLI_OVERLAP_ALIGNED = [
    "ent_drop_place", "ent_passive", "ent_conjunction", "ent_since_clause", "unrelated", "other_verb",
    "refused_contradiction", "failed_contradiction",
]
NLI_OVERLAP_CONFLICTING = ["swap_roles", "passive_swap", "near_subject", "if_clause", "other_place", "managed_entailment"]
NLI_NEGATION_ALIGNED = ["neg_contradiction", "never_contradiction", "managed_contradiction"]
NLI_NEGATION_CONFLICTING = ["refused_entailment", "failed_entailment", "neg_neutral"]
HANS_ENTAILED = ["ent_drop_place", "ent_passive", "ent_conjunction", "ent_since_clause"]
HANS_NOT_ENTAILED = ["swap_roles", "passive_swap", "near_subject", "if_clause"]


def _nli(rng, split: str, n: int, rho: float, negation_share: float, negation_rho: float):
    out = []
    for _ in range(n):
        if split == "hans":
            # balanced, every hypothesis built from premise words: overlap no longer implies entailment
            pool = HANS_ENTAILED if rng.random() < 0.5 else HANS_NOT_ENTAILED
            ex = _nli_case(rng, _pick(rng, pool))
            label = "entailment" if ex.label == "entailment" else "non-entailment"
            out.append(Example(ex.text_a, ex.text_b, label, ex.case, ex.heuristic, ex.case in HANS_ENTAILED))
            continue
        if split == "negation_pool":
            aligned = rng.random() < 0.5
            pool = NLI_NEGATION_ALIGNED if aligned else ["refused_entailment", "failed_entailment"]
        elif rng.random() < negation_share:
            aligned = rng.random() < negation_rho
            pool = NLI_NEGATION_ALIGNED if aligned else NLI_NEGATION_CONFLICTING
        else:
            aligned = rng.random() < rho
            pool = NLI_OVERLAP_ALIGNED if aligned else NLI_OVERLAP_CONFLICTING
        ex = _nli_case(rng, _pick(rng, pool))
        out.append(Example(ex.text_a, ex.text_b, ex.label, ex.case, ex.heuristic, aligned))
    labels = HANS_LABELS if split == "hans" else NLI_LABELS
    return out, labels


# -------------------------------------------------------------------------------------- paraphrase
def _question(n1, verb, n2, place=""):
    return f"why did the {n1} {verb} the {n2}{' ' + place if place else ''} ?"


def _paraphrase_case(rng, case: str) -> Example:
    n1, n2, n3, n4 = _pick(rng, PEOPLE, 4)
    vi = int(rng.integers(len(VERBS)))
    (vb, vp), (sb, _sp) = VERBS[vi], SYNONYMS[vi]
    wb = VERBS[(vi + 1 + int(rng.integers(len(VERBS) - 1))) % len(VERBS)][0]
    p1, p2 = _pick(rng, PLACES, 2)
    q = _question(n1, vb, n2, p1)
    sym = _pick(rng, SYMMETRIC_VERBS)
    cases = {
        # duplicates that share (nearly) every word (overlap-aligned)
        "dup_front_place": (q, f"{p1} , why did the {n1} {vb} the {n2} ?", "duplicate"),
        "dup_synonym": (q, _question(n1, sb, n2, p1), "duplicate"),
        "dup_conjunct_swap": (f"why did the {n1} and the {n2} {sym} {p1} ?", f"why did the {n2} and the {n1} {sym} {p1} ?", "duplicate"),
        # the passive paraphrase: the people change places, the meaning stays (overlap-aligned)
        "dup_passive": (q, f"why was the {n2} {vp} by the {n1} {p1} ?", "duplicate"),
        # non-duplicates that share (nearly) every word (overlap-conflicting; PAWS's word swapping)
        "swap_roles": (q, _question(n2, vb, n1, p1), "not_duplicate"),
        "other_place": (q, _question(n1, vb, n2, p2), "not_duplicate"),
        "passive_swap": (q, f"why was the {n1} {vp} by the {n2} {p1} ?", "not_duplicate"),
        # non-duplicates with few shared words (overlap-aligned)
        "unrelated": (q, _question(n3, wb, n4, p2), "not_duplicate"),
        "other_object": (q, _question(n1, wb, n4, p1), "not_duplicate"),
    }
    a, b, label = cases[case]
    return Example(a, b, label, case)


PARA_ALIGNED = ["dup_front_place", "dup_synonym", "dup_conjunct_swap", "dup_passive", "unrelated", "other_object"]
PARA_CONFLICTING = ["swap_roles", "other_place", "passive_swap"]
PAWS_DUPLICATE = ["dup_front_place", "dup_synonym", "dup_conjunct_swap", "dup_passive"]
PAWS_NOT_DUPLICATE = ["swap_roles", "other_place", "passive_swap"]


def _paraphrase(rng, split: str, n: int, rho: float, paws_duplicate_share: float):
    out = []
    for _ in range(n):
        if split == "paws":
            # pairs whose words (nearly) all recur, told apart only by who does what; ~31% paraphrases, as PAWS-QQP
            dup = rng.random() < paws_duplicate_share
            case = _pick(rng, PAWS_DUPLICATE if dup else PAWS_NOT_DUPLICATE)
            aligned = dup
        else:
            aligned = rng.random() < rho
            case = _pick(rng, PARA_ALIGNED if aligned else PARA_CONFLICTING)
        ex = _paraphrase_case(rng, case)
        out.append(Example(ex.text_a, ex.text_b, ex.label, ex.case, "", aligned))
    return out, PARAPHRASE_LABELS


# -------------------------------------------------------------------------------- fact verification
RELATIONS = {
    "born": ("was born in", CITIES),
    "works": ("works in", CITIES),
    "plays": ("plays the", INSTRUMENTS),
    "speaks": ("speaks", LANGUAGES),
}
NEGATED = {"was born in": "was not born in", "works in": "does not work in", "plays the": "does not play the",
           "speaks": "does not speak"}


def _fact_evidence(rng, name):
    rel, missing = _pick(rng, list(RELATIONS), 2)
    facts = {rel: _pick(rng, RELATIONS[rel][1])}
    return f"{name} {RELATIONS[rel][0]} {facts[rel]} .", facts, missing


def _fact_claim(rng, name, facts, missing_rel, label: str, negated: bool):
    """A claim with the requested true label; `negated` puts the cue word 'not' into the claim."""
    if label == "NOT ENOUGH INFO":
        phrase, values = RELATIONS[missing_rel]
        value = _pick(rng, values)
        return f"{name} {NEGATED[phrase] if negated else phrase} {value} ."
    rel = _pick(rng, list(facts))
    phrase, values = RELATIONS[rel]
    other = _pick(rng, [v for v in values if v != facts[rel]])
    # a positive claim is supported by the stated value; a negated claim is supported by any other value
    states_fact = (label == "SUPPORTS") != negated
    value = facts[rel] if states_fact else other
    return f"{name} {NEGATED[phrase] if negated else phrase} {value} ."


def _fact(rng, split: str, n: int, rho: float):
    out = []
    if split == "symmetric":
        # each claim twice: with evidence that supports it and with evidence that refutes it
        while len(out) < n:
            name = _pick(rng, NAMES)
            negated = bool(rng.random() < 0.5)
            rel = _pick(rng, list(RELATIONS))
            phrase, values = RELATIONS[rel]
            value, other = _pick(rng, values, 2)
            claim = f"{name} {NEGATED[phrase] if negated else phrase} {value} ."
            for ev_value, positive in ((value, True), (other, False)):
                evidence = f"{name} {phrase} {ev_value} ."
                label = "SUPPORTS" if positive != negated else "REFUTES"
                aligned = negated == (label == "REFUTES")
                out.append(Example(evidence, claim, label, "negated" if negated else "plain", "", aligned))
        return out[:n], SYMMETRIC_LABELS
    for _ in range(n):
        name = _pick(rng, NAMES)
        evidence, facts, missing = _fact_evidence(rng, name)
        label = _pick(rng, FACT_LABELS)
        aligned = bool(rng.random() < rho)
        # the claim-only cue: 'not' goes with REFUTES on aligned examples and with the other labels otherwise
        negated = (label == "REFUTES") == aligned
        claim = _fact_claim(rng, name, facts, missing, label, negated)
        out.append(Example(evidence, claim, label, "negated" if negated else "plain", "", aligned))
    return out, FACT_LABELS


# ------------------------------------------------------------------------------------------ public
GENERATORS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "nli": (_nli, ("train", "dev", "hans", "negation_pool")),
    "paraphrase": (_paraphrase, ("train", "dev", "paws")),
    "fact": (_fact, ("train", "dev", "symmetric")),
}


def generate(
    generator: str,
    split: str,
    n: int,
    seed: int = 0,
    rho: float = 0.9,
    negation_share: float = 0.25,
    negation_rho: float | None = None,
    paws_duplicate_share: float = 0.313,
) -> tuple[pd.DataFrame, list[str]]:
    """Generate ``n`` examples of ``split`` for a synthetic task.

    Returns a frame in the prepared schema (``id, text_a, text_b, label`` plus provenance columns ``case``,
    ``heuristic``, ``subcase``, ``bias_aligned``) and the ordered label names the ``label`` column indexes.
    """
    if generator not in GENERATORS:
        raise ValueError(f"synthetic generator {generator!r} is unknown; choose one of {sorted(GENERATORS)}")
    fn, splits = GENERATORS[generator]
    if split not in splits:
        raise ValueError(f"synthetic:{generator} has no split {split!r}; choose one of {list(splits)}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"synthetic:{generator}: field 'rho' must lie in [0, 1], got {rho!r}")
    if n <= 0:
        raise ValueError(f"synthetic:{generator}: field 'n' must be positive, got {n!r}")
    rng = _rng(generator, split, seed)
    if generator == "nli":
        examples, labels = fn(rng, split, n, rho, negation_share, rho if negation_rho is None else negation_rho)
    elif generator == "paraphrase":
        examples, labels = fn(rng, split, n, rho, paws_duplicate_share)
    else:
        examples, labels = fn(rng, split, n, rho)
    index = {name: i for i, name in enumerate(labels)}
    frame = pd.DataFrame(
        {
            "id": [f"{generator}-{split}-{i}" for i in range(len(examples))],
            "text_a": [e.text_a for e in examples],
            "text_b": [e.text_b for e in examples],
            "label": np.array([index[e.label] for e in examples], dtype=np.int64),
            "case": [e.case for e in examples],
            "heuristic": [e.heuristic for e in examples],
            "subcase": [e.case for e in examples],
            "bias_aligned": [bool(e.bias_aligned) for e in examples],
        }
    )
    return frame, list(labels)
