"""The library's user-facing errors: what a step reports as one line on stderr and exit code 1, not a traceback.

Each of these is raised on a bad input — a data file, a mask file, a mask of another model, a checkpoint, a word
list, a config value — or on a machine that cannot take the output (``ENVIRONMENT_ERRORS``: a full disk), and its
message already names the file (or config key), the field and the value. Every
step's ``run_step`` (maskbench/steps/__init__.py) turns them into ``<step module>: error: <message>``; any other
exception is a bug and keeps its traceback.

They are known here by class name (``USER_ERRORS``), not imported: the step package must stay light (the warm
runner takes the job over before torch is imported), and an error's class is defined wherever its module
lives, but for a base error that modules of different packages derive from: that one is defined here, on the
ground floor, so that neither package imports the other for it (``DataError``, which data/schema.py raises and
hub.py's ``HubError`` extends, while data/hf_source.py imports hub.py). A class is matched only when it is
defined in maskbench, anywhere in an exception's class hierarchy.
tests/test_error_path.py checks that every name is a ValueError subclass somewhere in src/ and that every such
``*Error`` class of src/ is either listed here or in ``INTERNAL_ERRORS``.
"""

from __future__ import annotations

import re

USER_ERRORS = frozenset({
    "BiasDataError",      # tracks/gender/crows_pairs.py: CrowS-Pairs and StereoSet files
    "CellError",          # matrix/cells.py: a matrix cell record (a track's records file)
    "CheckpointError",    # checkpoint_integrity.py: a model checkpoint that is cut, damaged or unsealed
    "ConfigError",        # config_checks.py (workflow/workflow_config.py raises it): a config value
    "CorpusError",        # tracks/gender/corpus.py: the gender corpus
    "DataError",          # below (data/schema.py raises it): a dataset, a prepared file, a probability file
    "DeparturesError",    # report/departures.py: docs/departures.yaml
    "ExportError",        # text/hf_export.py: an export request (output folder, evaluation record)
    "GranularityError",   # masking/granularity.py: a granularity that does not fit the model
    "HeadError",          # tracks/gender/mlm.py: a masked-LM head file
    "HubError",           # hub.py: a Hub repo, revision or file missing from the Hub cache
    "MaskFileError",      # masking/codec.py: a mask file
    "MaskMismatchError",  # masking/apply.py: a mask of another model
    "PrecisionError",     # precision.py: a precision name (compute.precision, --precision)
    "ProgressSettingError",  # progress.py: a progress setting (logging:, MASKBENCH_PROGRESS_SECONDS / _TENSORBOARD)
    "ModelSpecError",     # text/models.py: a model spec (config model:)
    "SeatFileError",      # tracks/gender/seat.py: a SEAT file
    "SelectorError",      # masking/module_kinds.py, masking/selectors.py: module selectors of the config
    "VisionDataError",    # tracks/vision/mnist_wheel.py: the MNIST wheel, a prepared image file
    "WordListError",      # tracks/gender/wordlists.py: a gender word list
})
# errors of the machine rather than of an input, reported the same way (one line naming the file): an OSError each
ENVIRONMENT_ERRORS = frozenset({
    "DiskFullError",      # runtime.py: a write that found no space left, naming the file and the bytes it needed
})
# *Error classes of src/ that are not about an input (none today); listed so that the test above sees every class
INTERNAL_ERRORS: frozenset[str] = frozenset()


class DataError(ValueError):
    """Bad data or a bad dataset spec; the message names the file (or dataset), the field and the value."""


def is_user_error(err: BaseException) -> bool:
    """Whether ``err`` is one of the library's user-facing errors (a subclass of one counts too)."""
    return any(cls.__name__ in USER_ERRORS | ENVIRONMENT_ERRORS and cls.__module__.startswith("maskbench.")
               for cls in type(err).__mro__)


def one_line(err: BaseException) -> str:
    """The error's message on one line (a message that spans lines is joined with spaces)."""
    return re.sub(r"\s*\n\s*", " ", str(err).strip()) or type(err).__name__
