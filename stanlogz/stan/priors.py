"""Does a Stan program's prior integrate to one?  A per-parameter check of the code.

stanlogz's log Z integrates ``exp(target)`` with every constant kept, so a bounded parameter whose
prior density has mass outside its bounds (``real<lower=0> tau; tau ~ cauchy(0, 5);`` without
``T[0, ]``: mass 1/2) or that has no prior statement at all (``real<lower=0, upper=10> s;``:
implicit density 1, mass 10) shifts log Z by the log of that mass. Where a parameter's prior is
one whole-variable statement with arguments known from literals or data, :func:`check_priors`
computes the mass inside the declared bounds in closed form (scipy CDFs); others are listed as
unchecked, with the reason. stanc's pedantic mode names parameters with no prior."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Route
from .code import _block, strip_comments
from .program import StanProgram

#: Parameter types whose bounds apply elementwise to a box (others, e.g. simplex, are skipped).
_BOX_TYPES = ("real", "vector", "row_vector", "matrix")


@dataclass(frozen=True)
class PriorMass:
    """One parameter's prior mass inside its declared bounds (``log_mass`` for all elements)."""

    name: str
    prior: str  # e.g. "cauchy(0, 5)" or "implicit uniform"
    lower: float
    upper: float
    n_elements: int
    log_mass: float

    @property
    def mass_per_element(self) -> float:
        return math.exp(self.log_mass / self.n_elements)

    def describe(self) -> str:
        """One line: which prior, which range, which mass, and the fix."""
        rng = f"({_num(self.lower)}, {_num(self.upper)})"
        each = " per element" if self.n_elements > 1 else ""
        elems = f" ({self.n_elements} elements)" if self.n_elements > 1 else ""
        if self.prior == "implicit uniform":
            return (f"parameter {self.name}{elems} has no prior statement: its implicit density "
                    f"1 on {rng} has mass {_num(self.mass_per_element)}{each}, so log Z is "
                    f"higher by {_shift(self.log_mass)}; give it a prior, e.g. "
                    f"{self.name} ~ uniform({_num(self.lower)}, {_num(self.upper)})")
        untruncated = self.prior.split(" T[")[0]
        return (f"parameter {self.name}{elems}: {self.prior} has mass "
                f"{_num(self.mass_per_element)}{each} on its declared range {rng}, so log Z is "
                f"{'lower' if self.log_mass < 0 else 'higher'} by {_shift(self.log_mass)}; "
                f"normalize it: {self.name} ~ {untruncated} T[{_bound(self.lower)}, "
                f"{_bound(self.upper)}], or add target += {-self.log_mass:.6g};")


@dataclass
class PriorCheck:
    """The prior's normalization as far as the code shows it.

    ``log_mass`` is the sum of the unnormalized parameters' log masses: the program's log Z minus
    this is the log Z with those priors normalized. ``no_prior`` names parameters stanc's pedantic
    mode finds without a prior (nor a prior statement on the parameter itself); ``unchecked``
    maps bounded parameters whose prior could not be checked to the reason.
    """

    masses: list[PriorMass] = field(default_factory=list)
    no_prior: list[str] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)
    normalized: list[str] = field(default_factory=list)

    @property
    def log_mass(self) -> float:
        return float(sum(m.log_mass for m in self.masses))

    def to_dict(self) -> dict[str, Any]:
        return {"log_mass": self.log_mass,
                "parameters": [{"name": m.name, "prior": m.prior, "lower": m.lower,
                                "upper": m.upper, "n_elements": m.n_elements,
                                "log_mass": m.log_mass} for m in self.masses],
                "normalized": list(self.normalized), "no_prior": list(self.no_prior),
                "unchecked": dict(self.unchecked)}


def _num(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:.6g}"


def _bound(x: float) -> str:
    return "" if math.isinf(x) else f"{x:.6g}"


def _shift(log_mass: float) -> str:
    """``0.693 (log 2)`` when exp|log_mass| is near an integer, else the number."""
    a = abs(log_mass)
    k = round(math.exp(a)) if a < 30 else 0
    tag = f" (log {k})" if k >= 2 and abs(math.log(k) - a) < 1e-6 else ""
    return f"{a:.4g}{tag}"


# ------------------------------------------------------------------ expressions from the code
_FUNCS = {"sqrt": math.sqrt, "exp": math.exp, "log": math.log, "inv": lambda x: 1.0 / x,
          "square": lambda x: x * x, "pi": lambda: math.pi, "e": lambda: math.e,
          "positive_infinity": lambda: math.inf, "negative_infinity": lambda: -math.inf}


def evaluate(expr: str, data: Mapping[str, Any]) -> float | None:
    """The value of a Stan scalar expression made of literals, scalar data and a few functions
    (``sqrt``, ``exp``, ``log``...); None when it involves anything else."""
    text = expr.strip().replace("^", "**")
    if not text:
        return None
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None

    def ev(n: ast.AST) -> float:
        if isinstance(n, ast.Constant) and isinstance(n.value, int | float) \
                and not isinstance(n.value, bool):
            return float(n.value)
        if isinstance(n, ast.Name):
            v = data.get(n.id)
            if isinstance(v, int | float) and not isinstance(v, bool):
                return float(v)
            raise ValueError(n.id)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub | ast.UAdd):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if type(n.op) in ops:
                return ops[type(n.op)]
            if isinstance(n.op, ast.Div):
                return a / b
            if isinstance(n.op, ast.Pow):
                return a**b
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FUNCS \
                and not n.keywords:
            return float(_FUNCS[n.func.id](*[ev(a) for a in n.args]))
        raise ValueError(ast.dump(n))

    try:
        v = ev(node)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
    return v if not math.isnan(v) else None


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out]


# ------------------------------------------------------------------ declarations
@dataclass(frozen=True)
class _Decl:
    name: str
    kind: str
    lower: float | None  # None: a bound that is not a known number
    upper: float | None
    has_bounds: bool
    n_elements: int | None


_TYPE = re.compile(r"^(?:array\s*\[[^\]]*\]\s*)?[A-Za-z_]\w*\s*(?:<.*>)?\s*(?:\[[^\]]*\])?\s*",
                   re.S)


def _one_per_name(stmt: str) -> list[str]:
    """``real<lower=0> a, b`` -> ``["real<lower=0> a", "real<lower=0> b"]`` (Stan allows several
    names after one type; commas inside the type's brackets do not split)."""
    m = _TYPE.match(stmt)
    if not m:
        return [stmt]
    names = _split_top(stmt[m.end():])
    return [stmt] if len(names) < 2 else [m.group(0) + n for n in names if n]


def _declarations(params: str, data: Mapping[str, Any]) -> list[_Decl]:
    out = []
    for stmt in (one for st in params.split(";") for one in _one_per_name(st.strip())):
        if not stmt:
            continue
        m = re.match(r"^(?:array\s*\[(?P<arr>[^\]]*)\]\s*)?(?P<kind>[A-Za-z_]\w*)\s*"
                     r"(?:<(?P<bounds>.*)>)?\s*(?:\[(?P<dims>[^\]]*)\])?\s*(?P<name>[A-Za-z_]\w*)"
                     r"\s*(?:\[(?P<old>[^\]]*)\])?$", stmt, flags=re.S)
        if not m:
            words = re.findall(r"[A-Za-z_]\w*", re.sub(r"<.*>|\[[^\]]*\]", " ", stmt))
            if words:
                out.append(_Decl(words[-1], "?", None, None, "<" in stmt, None))
            continue
        lower: float | None = -math.inf
        upper: float | None = math.inf
        bounds = m.group("bounds")
        if bounds:
            for part in _split_top(bounds):
                key, _, val = part.partition("=")
                key = key.strip()
                if key == "lower":
                    lower = evaluate(val, data)
                elif key == "upper":
                    upper = evaluate(val, data)
        n: int | None = 1
        for dims in (m.group("arr"), m.group("dims"), m.group("old")):
            for d in _split_top(dims) if dims else []:
                v = evaluate(d, data)
                n = None if v is None or n is None else n * int(v)
        has_bounds = bool(bounds and re.search(r"\b(lower|upper)\s*=", bounds))
        out.append(_Decl(m.group("name"), m.group("kind"), lower, upper, has_bounds, n))
    return out


# ------------------------------------------------------------------ prior statements
@dataclass(frozen=True)
class _Stmt:
    lhs: str  # the variable text left of ~ (or the first lpdf argument)
    dist: str
    args: str
    truncated: bool
    simple: bool  # the whole statement is this one density (nothing added)
    trunc: str = ""  # the text inside T[...]


_TILDE = re.compile(r"^(?P<lhs>.+?)~\s*(?P<dist>[A-Za-z_]\w*)\s*\((?P<args>.*?)\)\s*"
                    r"(?P<trunc>T\s*\[(?P<tb>.*)\])?\s*$", re.S)
_LPDF = re.compile(r"\b(?P<dist>[A-Za-z_]\w*?)_l(?:u)?p[dm]f\s*\(")


def _statements(model: str) -> list[_Stmt]:
    out = []
    for stmt in re.split(r"[;{}]", model):
        if "~" in stmt:
            m = _TILDE.match(stmt.strip())
            if m:
                lhs = m.group("lhs").strip()
                # a for/if header ahead of a braceless statement: keep the trailing expression
                head = re.match(r"^(?:for|if|while)\s*\(", lhs)
                if head:
                    depth, i = 0, lhs.index("(")
                    for i in range(lhs.index("("), len(lhs)):
                        depth += {"(": 1, ")": -1}.get(lhs[i], 0)
                        if depth == 0:
                            break
                    lhs = lhs[i + 1:].strip()
                out.append(_Stmt(lhs, m.group("dist"), m.group("args"),
                                 bool(m.group("trunc")), not head, m.group("tb") or ""))
        for lm in _LPDF.finditer(stmt):
            start = lm.end()
            depth, i = 1, start
            while i < len(stmt) and depth:
                depth += {"(": 1, ")": -1}.get(stmt[i], 0)
                i += 1
            inner = stmt[start: i - 1]
            first, bar, rest = inner.partition("|")
            if not bar:
                continue
            whole = re.fullmatch(r"\s*target\s*\+=\s*", stmt[: lm.start()]) is not None \
                and not stmt[i:].strip()
            out.append(_Stmt(first.strip(), lm.group("dist"), rest, False, whole))
    return out


def _frozen(dist: str, args: list[float]) -> Any:
    """The scipy distribution of Stan's ``dist(args)``; None when not known here."""
    from scipy import stats

    a = args
    table = {
        ("normal", 2): lambda: stats.norm(a[0], a[1]),
        ("std_normal", 0): lambda: stats.norm(0, 1),
        ("cauchy", 2): lambda: stats.cauchy(a[0], a[1]),
        ("student_t", 3): lambda: stats.t(a[0], a[1], a[2]),
        ("double_exponential", 2): lambda: stats.laplace(a[0], a[1]),
        ("logistic", 2): lambda: stats.logistic(a[0], a[1]),
        ("gumbel", 2): lambda: stats.gumbel_r(a[0], a[1]),
        ("skew_normal", 3): lambda: stats.skewnorm(a[2], a[0], a[1]),
        ("exponential", 1): lambda: stats.expon(scale=1 / a[0]),
        ("gamma", 2): lambda: stats.gamma(a[0], scale=1 / a[1]),
        ("inv_gamma", 2): lambda: stats.invgamma(a[0], scale=a[1]),
        ("lognormal", 2): lambda: stats.lognorm(a[1], scale=math.exp(a[0])),
        ("weibull", 2): lambda: stats.weibull_min(a[0], scale=a[1]),
        ("chi_square", 1): lambda: stats.chi2(a[0]),
        ("inv_chi_square", 1): lambda: stats.invgamma(a[0] / 2, scale=0.5),
        ("beta", 2): lambda: stats.beta(a[0], a[1]),
        ("uniform", 2): lambda: stats.uniform(a[0], a[1] - a[0]),
    }
    make = table.get((dist, len(a)))
    try:
        return None if make is None else make()
    except (ValueError, OverflowError):
        return None


def _log_mass(dist: Any, lower: float, upper: float) -> float:
    """log P(lower < X < upper), accurate in either tail."""
    with np.errstate(divide="ignore"):
        if dist.median() > lower:  # the mass lies mostly below lower's complement: use cdfs
            hi, lo = float(dist.logcdf(upper)), float(dist.logcdf(lower))
        else:
            hi, lo = float(dist.logsf(lower)), float(dist.logsf(upper))
    if hi == -math.inf or lo >= hi:
        return -math.inf if lo >= hi or hi == -math.inf else hi
    return hi + math.log1p(-math.exp(lo - hi))


def _truncation(text: str, data: Mapping[str, Any]) -> tuple[float, float] | None:
    """The bounds of ``T[text]`` (an empty side is infinite); None when one is not a number
    known from the data."""
    parts = _split_top(text)
    if len(parts) != 2:
        return None
    lo = evaluate(parts[0], data) if parts[0] else -math.inf
    hi = evaluate(parts[1], data) if parts[1] else math.inf
    return None if lo is None or hi is None else (lo, hi)


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _priors_through_transformed(tp: str, stmts: list[_Stmt]) -> list[str]:
    """What is assigned to transformed parameters with a prior statement (``theta[1] = t1;``)."""
    out = []
    for lhs, eq, rhs in (st.partition("=") for st in re.split(r"[;{}]", tp)):
        words = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]|<[^>]*>", " ", lhs))
        if eq and not rhs.startswith("=") and not lhs.rstrip().endswith(("<", ">", "!")) \
                and words and any(_mentions(s.lhs, words[-1]) for s in stmts):
            out.append(rhs)
    return out


def check_priors(code: str, data: Mapping[str, Any] | str | None = None,
                 no_prior: list[str] | None = None) -> PriorCheck:
    """The prior mass inside each bounded parameter's declared range, as far as the code shows.

    ``data`` (a dict or JSON text) resolves sizes, bounds and prior arguments; ``no_prior`` are
    the parameters stanc's pedantic mode finds without a prior (see
    :func:`stanlogz.toolchain.stanc.parameters_without_prior`), used to tell an implicit
    uniform prior from one given through a transformed parameter.
    """
    if isinstance(data, str):
        data = json.loads(data or "{}")
    data = dict(data or {})
    code = strip_comments(code)
    params, model = _block(code, "parameters"), _block(code, "model") or ""
    tp = _block(code, r"transformed\s+parameters") or ""
    out = PriorCheck()
    if params is None:
        return out
    stmts = _statements(model)
    decls = _declarations(params, data)
    via_tp = _priors_through_transformed(tp, stmts)
    for d in decls:
        on_it = [s for s in stmts if _mentions(s.lhs, d.name)]
        if d.name in (no_prior or []) and not (on_it or any(_mentions(r, d.name) for r in via_tp)):
            out.no_prior.append(d.name)
        if not d.has_bounds:
            continue
        if d.kind not in _BOX_TYPES:
            out.unchecked[d.name] = f"{d.kind} parameters are not checked"
            continue
        if d.lower is None or d.upper is None:
            out.unchecked[d.name] = "a bound is not a number known from the data"
            continue
        if d.n_elements is None:
            out.unchecked[d.name] = "its size is not known from the data"
            continue
        if d.n_elements == 0:
            continue
        if not on_it:
            implicit = (d.name in (no_prior or []) if no_prior is not None
                        else not _mentions(tp, d.name) and not re.search(
                            rf"target\s*\+=[^;]*\b{re.escape(d.name)}\b", model))
            if implicit and d.upper - d.lower == 1.0:
                out.normalized.append(d.name)  # uniform on a unit interval: mass 1
            elif implicit and math.isfinite(d.lower) and math.isfinite(d.upper):
                out.masses.append(PriorMass(d.name, "implicit uniform", d.lower, d.upper,
                                            d.n_elements,
                                            d.n_elements * math.log(d.upper - d.lower)))
            elif not implicit:
                out.unchecked[d.name] = "its prior is not a statement on the parameter itself"
            continue
        if len(on_it) > 1 or on_it[0].lhs != d.name or not on_it[0].simple:
            out.unchecked[d.name] = ("its prior is not one whole-variable statement "
                                     f"({d.name} ~ dist(...))")
            continue
        s = on_it[0]
        cut = _truncation(s.trunc, data) if s.truncated else (-math.inf, math.inf)
        if cut is None:
            out.unchecked[d.name] = f"the truncation T[{s.trunc.strip()}] has bounds that are " \
                                    "not numbers known from the data"
            continue
        if s.truncated and cut == (d.lower, d.upper):
            out.normalized.append(d.name)  # truncated to exactly its declared range
            continue
        args = [evaluate(a, data) for a in _split_top(s.args)] if s.args.strip() else []
        if any(a is None for a in args):
            out.unchecked[d.name] = f"the arguments of {s.dist}({s.args.strip()}) are not " \
                                    "numbers known from the data"
            continue
        dist = _frozen(s.dist, args)  # type: ignore[arg-type]
        if dist is None:
            out.unchecked[d.name] = f"{s.dist} is not a distribution this check knows"
            continue
        # T[L, U] divides by P(L < X < U) and rejects x outside [L, U]: the mass on the declared
        # range is P(X in both) / P(L < X < U)
        lo, hi = max(d.lower, cut[0]), min(d.upper, cut[1])
        lm = (_log_mass(dist, lo, hi) if lo < hi else -math.inf) - _log_mass(dist, *cut)
        text = f"{s.dist}({', '.join(f'{a:.6g}' for a in args)})"  # type: ignore[str-format]
        if s.truncated:
            text += f" T[{_bound(cut[0])}, {_bound(cut[1])}]"
        if abs(lm) > 1e-9:
            out.masses.append(PriorMass(d.name, text, d.lower, d.upper, d.n_elements,
                                        d.n_elements * lm))
        else:
            out.normalized.append(d.name)
    return out


def program_priors(model: StanProgram) -> PriorCheck:
    """:func:`check_priors` of a :class:`~stanlogz.stan.model.StanModel` (its code and data),
    with stanc's pedantic list of parameters without a prior."""
    from ..toolchain import find_toolchain
    from ..toolchain.stanc import parameters_without_prior

    code = getattr(model, "code", "") or ""
    if not code:
        return PriorCheck()
    try:
        no_prior = parameters_without_prior(find_toolchain().stanc, code)
    except Exception:  # no toolchain: the textual check alone
        no_prior = None
    return check_priors(code, getattr(model, "data_json", None) or "{}", no_prior)


# ------------------------------------------------------------------ warnings
def prior_warnings(priors: PriorCheck) -> list[str]:
    """One line per parameter whose prior does not integrate to one or is missing."""
    out = [m.describe() for m in priors.masses]
    known = {m.name for m in priors.masses} | set(priors.normalized)
    for name in priors.no_prior:
        if name not in known:
            out.append(f"parameter {name} has no prior (stanc's pedantic mode): its implicit "
                       "prior is flat, improper on an unbounded range (log Z does not exist) "
                       "and of arbitrary scale on a bounded one; give it a proper prior")
    return out


def add_prior_check(res: Any, priors: PriorCheck, normalize: bool) -> None:
    """The prior check in an :class:`~stanlogz.estimators.base.EvidenceResult`'s diagnostics and
    warnings; with ``normalize`` log Z with every checked prior normalized replaces the
    program's."""
    res.diagnostics["prior_check"] = priors.to_dict()
    for w in prior_warnings(priors):
        if not any(w.split(":")[0] in old and "never appears" in old for old in res.warnings):
            res.warnings.append(w)
    if not priors.masses:
        return
    lm = priors.log_mass
    fixed = res.log_z - lm
    res.diagnostics["log_z_program"] = res.log_z
    res.diagnostics["log_z_prior_normalized"] = fixed
    if normalize:
        res.log_z = fixed
        res.warnings.append(f"log Z is reported with the priors above normalized: the program's "
                            f"own log Z is {fixed + lm:.4f} (log prior mass {lm:.4g})")
    else:
        res.warnings.append(f"the prior has log mass {lm:.4g}, not 0: with the priors above "
                            f"normalized, log Z = {fixed:.4f} ± {res.log_z_se:.4f} "
                            f"({Route(options={'normalize_prior': True})} reports that)")


def mass_warnings(names: Sequence[str], results: Sequence[Any]) -> list[str]:
    """A warning when the programs' checked log prior masses differ: every log Bayes factor
    against another program is then off by the difference."""
    lm = [float(r.diagnostics.get("prior_check", {}).get("log_mass", 0.0)) for r in results]
    if max(lm) - min(lm) < 1e-9:
        return []
    shown = ", ".join(f"{n} {v:.4g}" for n, v in zip(names, lm, strict=True))
    return [f"the programs' priors have different log masses ({shown}): each log Bayes factor "
            f"is off by the difference; {Route(options={'normalize_prior': True})} compares the "
            "prior-normalized log Z"]
