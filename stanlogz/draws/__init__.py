"""Posterior draws of a Stan program: the :class:`Draws` container (``core``), its summary
(``summary``), CmdStan CSV (``stancsv``), conversions from cmdstanpy, ArviZ and arrays
(``convert``), sampling with stanlogz's NUTS or CmdStan (``sample``), the draws a workflow
uses (``obtain``: given or sampled) and continuing chains (``continuation``)."""

from .._util.files import atomic_write_text
from .convert import as_draws, from_array, from_cmdstanpy, from_inference_data
from .core import DRAW_SOURCES, SAMPLER_COLUMNS, Draws, flat_name, group_flat_names
from .obtain import obtain_draws
from .sample import sample, sample_cmdstanpy
from .stancsv import from_csv, write_csv
from .summary import ESS_PER_CHAIN_MIN, RHAT_MAX, DrawsSummary

__all__ = ["DRAW_SOURCES", "ESS_PER_CHAIN_MIN", "RHAT_MAX", "SAMPLER_COLUMNS", "Draws",
           "DrawsSummary", "as_draws", "atomic_write_text", "flat_name", "from_array",
           "from_cmdstanpy", "from_csv", "from_inference_data", "group_flat_names", "obtain_draws",
           "sample", "sample_cmdstanpy", "write_csv"]
