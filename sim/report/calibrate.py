"""Text and TOML renderings of a calibration (pure functions; the CLI prints/writes them)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from sim.calibration.result import Calibration, FittedValue
from sim.report.screen import fit_width
from sim.scenario.schema import Scenario
from sim.scenario.toml_writer import dumps_scenario


def _clean(x: float) -> float:
    """Round-off (|x| < 1e-9) shown as 0, and never as -0."""
    return 0.0 if abs(x) < 1e-9 else x


def _percent(x: float) -> str:
    return f"{_clean(100 * x):+6.2f}%" if math.isfinite(x) else "      -"


def _value(v: FittedValue) -> str:
    if v.fitted:
        return f"{v.value:.6g} ± {v.stderr:.2g}" if v.stderr is not None else f"{v.value:.6g}"
    return f"{v.value:.6g} (kept)"


def _short_source(source: str) -> str:
    """A figure's source with each file path (two or more slashes, or a leading one: not
    a unit such as tok/s) named by its base name (``--verbose``: the path)."""
    return re.sub(r"(?:/|[^\s/\[\]]+/)(?:[^\s/\[\]]+/)+([^\s/\[\]]+)", r"\1", source)


def _short_reason(reason: str, least: int = 1) -> str:
    """A reason's first clause: before its first colon or parenthesis at or after ``least``
    characters (the rest is ``--verbose``)."""
    cuts = (reason.find(": ", least), reason.find(" (", least))
    return reason[: min((i for i in cuts if i > 0), default=len(reason))]


#: A figure the calibrated scenario misses by more than this many of its standard errors
#: is not reproduced (a normal error falls beyond 3 sigma 0.27% of the time).
MISSED_SIGMAS = 3.0


def _missed(cal: Calibration) -> str:
    """What follows the chi-square when figures are missed beyond ``MISSED_SIGMAS``: how
    many, and that answers there are the model's, not the server's ("" when none is)."""
    missed = [r for r in cal.residuals if abs(_clean(r.normalized)) > MISSED_SIGMAS]
    if not missed:
        return ""
    return (
        f": {len(missed)} of {len(cal.residuals)} figures missed by more than "
        f"{MISSED_SIGMAS:g} σ, where the answers are the model's, not the server's "
        "(the values kept above hold it)"
    )


def format_calibration(cal: Calibration, verbose: bool = True, *, compact: bool = False) -> str:
    """The readable report: fitted values with standard errors, kept values and why, residuals.

    Not ``verbose``: a first screen, each kept value's reason in its first clause, the
    residuals in one line (the largest), the notes by their leads, files by base name,
    lines within ``WIDTH``. ``compact`` (not ``verbose``; a load sweep's report follows):
    the kept values in one wrapped line without their reasons, the notes counted."""
    compact = compact and not verbose
    source = (lambda s: s) if verbose else _short_source
    lines = ["fitted (± one standard error):"]
    width = max(len(v.field) for v in cal.values)
    for v in cal.fitted:
        base = f"   base {v.base:.6g}" if v.base is not None else ""
        lines.append(f"  {v.field:<{width}}  {_value(v):<22}{base}")
    if not cal.fitted:
        lines.append("  nothing: no value is determined by the data")
    if cal.kept and compact:
        kept = ", ".join(f"{v.field} {v.value:.6g}" for v in cal.kept)
        lines.append(f"kept from the base scenario (--verbose: why): {kept}")
    elif cal.kept:
        why = "" if verbose else "; --verbose: why"
        lines.append(f"kept from the base scenario (not determined by the data{why}):")
        for v in cal.kept:
            reason = (v.reason or "") if verbose else _short_reason(v.reason or "")
            lines.append(f"  {v.field:<{width}}  {v.value:.6g}   {reason}".rstrip())
    if cal.residuals and verbose:
        lines.append("residuals (model - measured):")
        w = max(len(r.what) for r in cal.residuals)
        for r in cal.residuals:
            lines.append(
                f"  {r.what:<{w}}  measured {r.measured:10.4g}  model {r.fitted:10.4g}  "
                f"{_percent(r.relative)}  ({_clean(r.normalized):+.2f} σ)  "
                f"[{r.source}]"
            )
    elif cal.residuals:
        worst = max(cal.residuals, key=lambda r: abs(_clean(r.normalized)))
        lines.append(
            f"residuals (model - measured) on {len(cal.residuals)} figures, largest "
            f"{_percent(worst.relative).strip()} ({_clean(worst.normalized):+.2f} σ): "
            f"{worst.what} [{_short_source(worst.source)}]; --verbose: each"
        )
    lines.append(
        f"chi-square {_clean(cal.chi2):.3g} with {cal.dof} degrees of freedom" + _missed(cal)
    )
    if cal.checks:
        lines.append("held out (not fitted; scored against the calibrated model):")
        w = max(len(r.what) for r in cal.checks)
        for r in cal.checks:
            lines.append(
                f"  {r.what:<{w}}  measured {r.measured:10.4g}  model {r.fitted:10.4g}  "
                f"{_percent(r.relative)}  [{source(r.source)}]"
            )
    if verbose:
        lines.extend(f"note: {n}" for n in cal.notes)
        return "\n".join(lines)
    if cal.notes and compact:
        lines.append(f"{len(cal.notes)} note{'s' * (len(cal.notes) != 1)} (--verbose: in full)")
    elif cal.notes:
        leads = "; ".join(_short_reason(n, least=25) for n in cal.notes)
        lines.append(f"notes (--verbose: in full): {leads}")
    return "\n".join(fit_width(lines))


def kept_origins(stated: Mapping[str, str], base: Scenario, calibrated: Scenario) -> dict[str, str]:
    """The base file's ``stated`` comments (dotted key -> text, sim/scenario/
    toml_comments.py ``value_comments``) on the values the calibrated scenario keeps as
    the base has them: a value it changed is no longer the one the comment was about."""
    was, now = base.model_dump(exclude_none=True), calibrated.model_dump(exclude_none=True)

    def value(dump: Mapping[str, object], dotted: str) -> object:
        section, _, key = dotted.partition(".")
        table = dump.get(section)
        return table.get(key, _ABSENT) if isinstance(table, dict) else _ABSENT

    return {
        dotted: text
        for dotted, text in stated.items()
        if (old := value(was, dotted)) is not _ABSENT and old == value(now, dotted)
    }


#: A key a scenario's dump does not hold (``kept_origins``).
_ABSENT = object()


def _origin_comments(
    scenario: Scenario,
    comments: Mapping[str, str],
    base_origins: Mapping[str, str] | None = None,
    base_name: str | None = None,
) -> dict[str, str]:
    """A comment for each value of a section (``[uncertainty]`` and nested tables aside)
    that ``comments`` leaves without one: the base file's own comment on it where it
    states one (``base_origins``, ``kept_origins``), else "equals specsim's default" when
    it is its field's default (whoever gave it), else its ``[uncertainty]`` entry's
    origin, else the base scenario's (``base_name``: the file's name, said with it)."""
    described = scenario.uncertainty.entries()
    stated = base_origins or {}
    base = "the base scenario's" + (f" ({base_name})" if base_name else "")
    found: dict[str, str] = {}
    for section, values in scenario.model_dump(exclude_none=True).items():
        model = getattr(scenario, section)
        if section == "uncertainty" or not isinstance(model, BaseModel):
            continue
        fields = type(model).model_fields
        for key, value in values.items():
            dotted = f"{section}.{key}"
            if dotted in comments or isinstance(value, dict) or key not in fields:
                continue
            if dotted in stated:
                found[dotted] = stated[dotted]
            elif getattr(model, key) == fields[key].get_default(call_default_factory=True):
                found[dotted] = "equals specsim's default (`specsim keys` gives its meaning)"
            elif dotted in described:
                origin = described[dotted].resolved_origin
                found[dotted] = f"{origin}: why under [uncertainty.{section}] {key}"
            else:
                found[dotted] = base
    return found


def calibrated_toml(
    cal: Calibration,
    base_source: str,
    base_comments: Mapping[str, str] | None = None,
    *,
    writer: str = "specsim calibrate",
    sets: Sequence[str] = (),
    base_origins: Mapping[str, str] | None = None,
    base_name: str | None = None,
) -> str:
    """The calibrated scenario file, with a header and a comment on every value: each
    fitted one's, the base's ``comments`` (dotted key -> text) when given, the command
    line's ``sets`` (``KEY=VALUE``) on the values they gave that nothing else explains, and
    where the others come from (``_origin_comments``: the base file's own comment on a
    kept value, ``base_origins``, else a default, an ``[uncertainty]`` entry or the base
    scenario ``base_name``). ``writer``: the command the header names."""
    sources = "; ".join(cal.sources) or "no figures"
    header = (
        f"Written by `{writer}` from {base_source}: {cal.scenario.description}\n"
        f"Calibrated to: {sources}\n"
        "Fitted values carry their standard error in a comment; every other value says\n"
        "where it came from (the base's comment on it, a default, an [uncertainty] entry,\n"
        "or else the base scenario's)."
    )

    comments: dict[str, str] = {}
    per_position = [v for v in cal.fitted if v.field.startswith("acceptance.per_position")]
    for v in cal.fitted:
        if v.reason and v.reason.startswith("measured"):
            shown = f"{v.value:.6g} ± {v.stderr:.2g}" if v.stderr is not None else f"{v.value:.6g}"
            comments[v.field] = f"{v.reason}: {shown}"
        elif not v.field.startswith("acceptance.per_position"):
            comments[v.field] = f"calibrated: {v.value:.6g} ± {v.stderr:.2g} (base {v.base})"
    if per_position:
        comments["acceptance.per_position"] = "calibrated: " + ", ".join(
            f"{v.value:.4g} ± {v.stderr:.2g}" for v in per_position
        )
        kept = [v.field for v in cal.kept if v.field.startswith("acceptance.per_position")]
        if kept:
            comments["acceptance.per_position"] += "; kept from base: " + ", ".join(kept)
    comments.update(dict(cal.written))
    if cal.scenario.serving is not None and cal.scenario.serving.calibrated_on:
        comments["serving.calibrated_terms"] = (
            f"Fitted by `{writer} --load-sweep` to the figures below: the serving\n"
            "commands' intervals re-fit these terms to them in every draw."
        )
        comments["serving.calibrated_on"] = (
            "The figures the load sweep was fitted to (decode time per output token)."
        )
    for key, text in (base_comments or {}).items():
        comments[key] = f"{text}\n{comments[key]}" if key in comments else text
    for given in sets:
        key = given.partition("=")[0].strip()
        comments.setdefault(key, f"--set {given.strip()}")
    comments.update(_origin_comments(cal.scenario, comments, base_origins, base_name))
    return dumps_scenario(cal.scenario, header=header, comments=comments)


def format_spread(spread: dict) -> str:
    """One line of a per-request spread fit (sim/calibration/spread_fit.py ``as_dict``)."""
    se = spread["concentration_stderr"]
    lo, hi = spread["concentration_interval95"]
    mean_se = spread["mean_stderr"]
    return (
        f"per-request    mean rate {spread['mean']:.4f}"
        + (f" ± {mean_se:.2g}" if mean_se is not None else "")
        + f", concentration {spread['concentration']:.4g}"
        + (f" ± {se:.2g}" if se is not None else "")
        + f" (95% [{lo:.4g}, {'open' if hi is None else f'{hi:.4g}'}]), rate sd "
        + f"{spread['rate_sd']:.4f} over {spread['requests']} requests at k {spread['num_steps']}"
    )


def format_imported(body: dict, verbose: bool = True) -> str:
    """What the imported files hold (import-only mode), in the calibrate vocabulary (not
    ``verbose``: each figure's file by its base name)."""
    lines = []
    for b in body["baselines"]:
        lines.append(
            f"baseline       {b['tok_s']:10.4g} tok/s ± {b['sigma']:.2g}   [{b['source']}]"
        )
    for p in body["points"]:
        lines.append(
            f"speculative    {p['tok_s']:10.4g} tok/s at k {p['num_steps']}, accept length "
            f"{p['accept_length']:.4g}   [{p['source']}]"
        )
    for a in body["accept_lengths"]:
        lines.append(
            f"accept length  {a['accept_length']:10.4g} ± {a['sigma']:.2g} at k {a['num_steps']}"
            f"   [{a['source']}]"
        )
    for c in body["cumulative"]:
        lines.append(
            f"cumulative c{c['position']:<2} {c['rate']:10.4f} ± {c['sigma']:.2g}   [{c['source']}]"
        )
    spread = body.get("per_request_spread")
    if spread is not None:
        lines.append(format_spread(spread))
    if not lines:
        lines.append("no figure to fit in these files")
    if not verbose:  # each figure's file by its base name; the notes whole, as they name it
        lines = [_short_source(ln) for ln in lines]
    lines.extend(f"note: {n}" for n in body["notes"])
    lines.append("(import only: give --scenario to fit these figures)")
    return "\n".join(lines)
