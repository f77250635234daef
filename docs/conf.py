"""Sphinx configuration of the stanlogz documentation (MyST markdown, MyST-NB notebooks)."""

from __future__ import annotations

import os
import re
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _installed_version

project = "stanlogz"
author = "the stanlogz developers"
copyright = "the stanlogz developers (BSD-3-Clause)"
try:
    release = _installed_version("stanlogz")
except PackageNotFoundError:  # building from a checkout that is not installed
    release = "0.1.0"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",
]

# .rst first: autosummary writes its generated pages with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store", "jupyter_execute",
                    ".jupyter_cache"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Tutorials are markdown notebooks executed at build time; CI may pass
# -D nb_execution_mode=off to build quickly without running Stan.
nb_execution_mode = os.environ.get("STANLOGZ_DOCS_EXECUTE", "cache")
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_cache_path = os.path.join(os.path.dirname(__file__), "_build", ".jupyter_cache")
nb_merge_streams = True

# numpydoc sections (Parameters, Returns, Raises, See Also, Examples); Google style is off so
# that prose docstrings ending a line with "Example:" stay prose.
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
# A class's Attributes section as a field list: as ``.. attribute::`` entries they would
# duplicate the members autodoc documents (dataclass fields, properties).
napoleon_use_ivar = True

# One page per public function and class (docs/generated/, written at build time), as ArviZ's
# and SciPy's references are; classes list their documented members.
autosummary_generate = True
templates_path = ["_templates"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False, "show-inheritance": False}


html_theme = "furo"
html_title = f"stanlogz {release}"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
suppress_warnings = ["myst.header"]

# STANLOGZ_DOCS_NITPICKY=1 also reports every cross-reference that does not resolve (to the
# standard library and numpy excepted: no network for intersphinx inventories here).
nitpicky = os.environ.get("STANLOGZ_DOCS_NITPICKY") == "1"
nitpick_ignore_regex = [
    ("py:class", r"(numpy|np|collections\.abc|os|pathlib|typing|concurrent\.futures|"
                 r"argparse|distributed|xarray|matplotlib)\..*"),
    ("py:class", r"dict\[str|list\[.*|tuple\[.*|Any|Path|Callable.*|Sequence.*|Mapping.*"),
]


_LITERAL = re.compile(r"(``.*?``|:[\w:]+:`[^`]*`|`[^`]*`)")


def _escape_bars(app, what, name, obj, options, lines):
    """Docstrings write absolute values as |x| (math, not reStructuredText substitutions):
    escape bars outside inline literals and roles."""
    for i, line in enumerate(lines):
        if "|" in line:
            parts = _LITERAL.split(line)
            lines[i] = "".join(p if j % 2 else p.replace("|", "\\|")
                               for j, p in enumerate(parts))


def setup(app):
    app.connect("autodoc-process-docstring", _escape_bars)
