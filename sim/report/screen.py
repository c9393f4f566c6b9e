"""First screens: an answer, what it rests on and how far it can move, in about 25 lines.

Each command's text starts with its answer in lines of at most ``WIDTH`` characters;
the details are under ``--verbose`` and every field is in ``--json``. The helpers here
wrap prose to the width and say a target's answer in plain words: out of reach at the
scenario's k (with the accept length it needs), out of reach under the acceptance shape
(with the flat-rate answer and what would make it reachable), or the rate it needs.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sim.scenario.sections.workload import UNSTATED_PROMPTS

#: The widest line of a first screen.
WIDTH = 100

#: Lines of a first screen, about (the run screen has two blocks, closed form and sample).
SCREEN_LINES = 30

#: Lines of a serving study's first screen (``within_screen``): a terminal's 25 rows.
STUDY_SCREEN_LINES = 25


def within_screen(
    blocks: Sequence[tuple[Sequence[str], str | None]], lines: int = STUDY_SCREEN_LINES
) -> list[str]:
    """The ``blocks``' lines, each wrapped to ``WIDTH``, in at most ``lines`` lines where the
    kept ones fit: whole when they fit, else without blank lines; else the blocks that have
    a pointer (``(block, pointer)``, pointer not None: what ``--verbose`` shows) are each
    replaced by their pointer line, the last such block first, until they fit (with blank
    lines, else without). Blocks without a pointer (the answer, its conditioning and loads
    beyond the measured ones, what it rests on) are always kept whole."""
    kept = [list(b) for b, _ in blocks]
    optional = [i for i, (_, pointer) in enumerate(blocks) if pointer is not None]
    out: list[str] = []
    for i in [None, *reversed(optional)]:
        if i is not None:
            kept[i] = [str(blocks[i][1])]
        flat = [ln for b in kept for ln in b]
        for candidate in (flat, [ln for ln in flat if ln.strip()]):
            if len(out := fit_width(candidate)) <= lines:
                return out
    return out


def wrap(text: str, indent: str = "  ", more: str = "    ", width: int = WIDTH) -> list[str]:
    """``text`` wrapped to ``width``: first line at ``indent``, the rest at ``more``."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=more,
        break_on_hyphens=False,
        break_long_words=False,
    )


def rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def span(interval: Sequence[float | None] | None) -> str:
    """A 90% interval as ``low-high`` (``unreachable`` for an end out of reach)."""
    if interval is None:
        return "-"
    lo, hi = interval
    return f"{'unreachable' if lo is None else f'{lo:.3f}'}-" + (
        "unreachable" if hi is None else f"{hi:.3f}"
    )


def target_lines(
    t: Mapping[str, Any],
    num_steps: int,
    shaped: bool,
    shape_phrase: str = "the default decay shape",
    plain: str | None = None,
) -> list[str]:
    """One target of a ``run`` (or ``compare``) document in plain words; ``plain``: what
    plain decoding does for a target below its nominal speed (``plain_reach``: its first
    line says so, then what speculation needs not to be slower, in short).

    ``t`` is a target of the JSON document (``target_to_dict``); ``shaped``: the rates
    fall with position (a decay shape), so the first-position rate and the flat answer
    differ. The headline never calls a capped rate an answer: when the shape asks for a
    first-position rate above 1 the target is out of reach under it, and the line says
    what does reach it (flat rates) and what would make it reachable.
    """
    tok = f"{t['tok_s']:g} tok/s"
    unc = t.get("uncertainty") or {}
    lines: list[str] = []
    at_k = t.get("first_rate_at_num_steps")
    if plain is not None:
        need = f"at k={num_steps} needs accept length {t['required_accept_length']:.2f}"
        if at_k is None:
            need = f"out of reach at k={num_steps}"
        # the rate at k where the line has room for it (--verbose's table has it always)
        short = f"{tok}: {plain}; {need}"
        full = short + (f" (rate {rate(at_k)})" if at_k is not None else "")
        lines += wrap(full if len(full) + 2 <= WIDTH else short, indent="  ", more="    ")
    elif num_steps > 0 and at_k is None:
        cap = num_steps + 1
        lines.append(
            f"  {tok}: out of reach at num_steps {num_steps} (needs accept length "
            f"{t['required_accept_length']:.2f}, max {cap})"
        )
    elif num_steps > 0:
        lines.append(
            f"  {tok}: at num_steps {num_steps} needs accept length "
            f"{t['required_accept_length']:.2f} (first-position rate {rate(at_k)})"
        )
    else:
        lines.append(f"  {tok}:")
    best_k = t.get("best_num_steps")
    flat = t.get("flat_alpha_at_best")
    flat_k = t.get("flat_best_num_steps")
    flat_text = (
        f"flat rates reach it at {rate(flat)} (k={flat_k})"
        if flat is not None
        else "flat rates do not reach it at any k"
    )
    interval = span(unc.get("interval90"))
    if best_k is None:
        text = f"no num_steps reaches it: the best ceiling is {t['max_ceiling_tok_s']:.1f} tok/s"
        text += f" at num_steps {t['max_ceiling_num_steps']} (every draft accepted)"
    elif not t["reachable"]:
        text = (
            f"with {shape_phrase}: needs first-position rate 1.000 — not reachable; "
            f"{flat_text}; reachable if rates fall less than the shape (5-95%: {interval})"
        )
    elif shaped:  # its 90% interval goes with what moves it, on the next line
        flat_short = f"flat rates: {rate(flat)} (k={flat_k})" if flat is not None else "flat: no k"
        text = (
            f"best num_steps {best_k}: first-position rate {rate(t['first_rate_at_best'])}, "
            f"chain mean {rate(t['mean_rate_at_best'])}; {flat_short}"
        )
    else:
        text = f"best num_steps {best_k}: rate {rate(t['first_rate_at_best'])} (90%: {interval})"
    lines += wrap(text, indent="    ", more="    ")
    drivers = unc.get("drivers") or []
    moved = f"90%: {interval}" if shaped and best_k is not None and t["reachable"] else ""
    if drivers:
        d = drivers[0]
        moved += "; " if moved else ""
        moved += (
            f"moves most with {d['field']}: {d['input_low']:.4g} .. {d['input_high']:.4g} "
            f"-> {rate(d['low'])} .. {rate(d['high'])}"
        )
    if moved:
        lines += wrap(moved, indent="    ", more="      ")
    return lines


def answer_lines(
    doc: Mapping[str, Any],
    num_steps: int,
    shaped: bool,
    shape_phrase: str,
    what: str,
    listed: Sequence[str],
) -> list[str]:
    """The first screen's answer to every target of a ``run`` document: what reaches each
    (``target_lines``, ``what`` says how it is computed), what to measure next, and the
    inputs of ``listed`` origins it rests on (its title line parts it from the head, with
    no blank line: the mix's three targets keep the screen to 25 lines)."""
    lines = [f"What reaches each target ({what})"]
    for t in doc["targets"]:
        reach = plain_reach(t["tok_s"], doc)
        if reach is not None:
            phrase, sure = reach
            if sure and not t.get("first_rate_at_best"):  # any acceptance: nothing to ask
                text = f"{t['tok_s']:g} tok/s: {phrase}, no speculation needed"
                lines += wrap(text, indent="  ", more="    ")
                continue
            lines += target_lines(t, num_steps, shaped, shape_phrase, plain=phrase)
            continue
        lines += target_lines(t, num_steps, shaped, shape_phrase)
    lines += measure_next_lines(doc["targets"])
    return lines + rests_on_line(doc["assumptions"], listed)


def plain_reach(tok_s: float, doc: Mapping[str, Any]) -> tuple[str, bool] | None:
    """(what plain decoding does for a mean ``tok_s`` target, whether surely) when the
    target is at or below plain decoding's nominal speed (``baseline_tok_s`` of a ``run``
    or ``search`` document), else None. Where the scenario's uncertain inputs move it
    (``uncertainty.baseline_tok_s_interval90``), the phrase carries its 90% interval, and a
    target at or above the interval's low end "may not" be reached: plain decoding falls
    short of it in more than 5% of the draws."""
    plain = doc.get("baseline_tok_s")
    if plain is None or tok_s > plain:
        return None
    interval = (doc.get("uncertainty") or {}).get("baseline_tok_s_interval90")
    lo, hi = interval if interval is not None else (None, None)
    if lo is None or hi is None or hi - lo <= 1e-9 * max(abs(plain), 1.0):
        return f"plain decoding reaches it ({plain:.1f} tok/s)", True
    within = f"({plain:.1f} tok/s, 90%: {lo:.1f}-{hi:.1f})"
    if tok_s < lo:
        return f"plain decoding reaches it {within}", True
    return f"plain decoding may not reach it {within}", False


def measure_next_lines(targets: Iterable[Mapping[str, Any]]) -> list[str]:
    """The next measurement, once when every target names the same one."""
    whats: list[str] = []
    for t in targets:
        m = (t.get("uncertainty") or {}).get("measure_next")
        if m and m["what"] not in whats:
            whats.append(m["what"])
    if not whats:
        return []
    what = whats[0].removeprefix("measure ")
    return wrap("measure next: " + what, more="    ")


def rests_on_line(assumptions: Iterable[Mapping[str, Any]], listed: Sequence[str]) -> list[str]:
    """What the answer rests on, counted by origin (``--verbose`` lists every input)."""
    rows = [
        a
        for a in assumptions
        if a["origin"] in listed or a.get("stderr") is not None or a.get("range") is not None
    ]
    if not rows:
        return ["  rests on exact inputs only"]
    counts: dict[str, int] = {}
    for a in rows:
        counts[a["origin"]] = counts.get(a["origin"], 0) + 1
    parts = ", ".join(f"{n} {origin}" for origin, n in counts.items())
    return wrap(
        f"rests on {len(rows)} uncertain inputs ({parts}); --verbose lists them", more="    "
    )


def fit_width(lines: Iterable[str], width: int = WIDTH) -> list[str]:
    """``lines`` with each longer than ``width`` wrapped, its continuation indented two
    spaces past its own indent."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += wrap(line.strip(), indent=lead, more=lead + "  ", width=width) or [line]
    return out


#: Topics of assumptions a first screen prints whole, not only names: an input the
#: scenario left out that changes what the answer means (sim/scenario/sections/workload.py
#: ``UNSTATED_PROMPTS``).
SHOWN_WHOLE = ("prompts",)


def prompt_text(doc: Mapping[str, Any], mean_tokens: float) -> str:
    """``"<mean_tokens> prompt / "`` for a serving document's lengths line, empty when the
    scenario gave no prompt (``UNSTATED_PROMPTS`` is then a line of its own)."""
    return "" if UNSTATED_PROMPTS in doc.get("assumptions", ()) else f"{mean_tokens:.0f} prompt / "


def assumptions_line(
    assumptions: Sequence[str], more: str | None = None, lead: str | None = None
) -> list[str]:
    """One line naming the assumptions a serving answer rests on (each's topic, the text
    before its colon); ``--verbose`` lists them whole (and shows ``more``, when given).
    ``lead``: the sentence the line continues (the sample the answer was drawn from), the
    two wrapped together. An assumption of a ``SHOWN_WHOLE`` topic is printed whole first
    (a reader cannot miss it)."""
    topics = list(dict.fromkeys(a.split(":", 1)[0] for a in assumptions))
    whole = [
        ln
        for a in dict.fromkeys(assumptions)
        if a.split(":", 1)[0] in SHOWN_WHOLE
        for ln in wrap(a, indent="", more="  ")
    ]
    shows = f"--verbose: them, {more}" if more else "--verbose lists them"
    if assumptions:
        text = f"rests on {len(assumptions)} assumptions ({', '.join(topics)}); {shows}"
    else:
        text = f"--verbose: {more}" if more else ""
    text = "; ".join(t for t in (lead, text) if t)
    return whole + (wrap(text, indent="", more="  ") if text else [])


def first_screen(full: str, assumptions: Sequence[str]) -> str:
    """A report's text as its first screen: the ``assumptions:`` block replaced by one
    line naming them, every line wrapped to ``WIDTH``."""
    lines: list[str] = []
    skipping = False
    for line in full.splitlines():
        if line == "assumptions:":
            skipping = True
            continue
        if skipping and line.startswith("  - "):
            continue
        skipping = False
        lines.append(line)
    while lines and not lines[-1].strip():
        lines.pop()
    tail = [ln for ln in lines[-1:] if ln.startswith("(")]  # a closing count: "(65 runs)"
    body = lines[: len(lines) - len(tail)]
    while body and not body[-1].strip():
        body.pop()
    return "\n".join(fit_width([*body, "", *assumptions_line(assumptions), *tail]))


def fits(text: str, lines: int = SCREEN_LINES, width: int = WIDTH) -> bool:
    """Whether ``text`` fits a screen of ``lines`` lines of ``width`` characters."""
    rows = text.splitlines()
    return len(rows) <= lines and all(len(r) <= width for r in rows)
