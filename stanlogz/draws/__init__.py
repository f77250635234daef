"""Posterior draws of a Stan program: the :class:`Draws` container, its summary, CmdStan CSV,
conversions from cmdstanpy / ArviZ / arrays, and sampling with stanlogz's NUTS or CmdStan."""

from .core import (
    ESS_PER_CHAIN_MIN,
    RHAT_MAX,
    SAMPLER_COLUMNS,
    SOURCES,
    Draws,
    DrawsSummary,
    as_draws,
    atomic_write_text,
    flat_name,
    from_array,
    from_cmdstanpy,
    from_csv,
    from_inference_data,
    group_flat_names,
    sample,
    sample_cmdstanpy,
    write_csv,
)

__all__ = ["ESS_PER_CHAIN_MIN", "RHAT_MAX", "SAMPLER_COLUMNS", "SOURCES", "Draws", "DrawsSummary",
           "as_draws", "atomic_write_text", "flat_name", "from_array", "from_cmdstanpy",
           "from_csv", "from_inference_data", "group_flat_names", "sample", "sample_cmdstanpy",
           "write_csv"]
