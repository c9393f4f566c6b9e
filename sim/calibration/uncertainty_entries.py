"""The ``[uncertainty]`` entries a calibration writes: the fitted values' standard errors and
correlations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from sim.calibration.fit_block import six_digits
from sim.calibration.result import FittedValue
from sim.scenario.schema import Scenario

CALIBRATED_REASON = "fitted by specsim calibrate"


def uncertainty_overrides(
    base: Scenario,
    fitted: Sequence[FittedValue],
    covariance: np.ndarray,
    values: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``[uncertainty]`` entries for the fitted values (origin ``calibrated``, their
    standard errors) and their correlations, merged with the base's correlations of the
    values it keeps (block-diagonal: the blocks were fitted separately)."""
    out: dict[str, Any] = {}
    lists: dict[str, dict[int, float]] = {}
    for v in fitted:
        if v.stderr is None:
            continue
        if "[" in v.field:
            name, index = v.field[:-1].split("[")
            lists.setdefault(name, {})[int(index)] = v.stderr
        else:
            section, key = v.field.split(".", 1)
            out[f"uncertainty.{section}.{key}"] = {
                "stderr": six_digits(v.stderr),
                "origin": "calibrated",
                "reason": CALIBRATED_REASON,
            }
    for name, per_entry in lists.items():
        written = (values or {}).get(name)
        length = len(written) if isinstance(written, list) else max(per_entry) + 1
        section, key = name.split(".", 1)
        out[f"uncertainty.{section}.{key}"] = {
            "stderr": [six_digits(per_entry.get(i, 0.0)) for i in range(length)],
            "origin": "calibrated",
            "reason": CALIBRATED_REASON + " (0: kept from the base)",
        }
    se = np.array([v.stderr or 0.0 for v in fitted])
    ok = [i for i, s in enumerate(se) if s > 0]
    fields = [fitted[i].field for i in ok]
    corr = np.eye(len(ok))
    if len(ok) >= 2:
        cov = np.asarray(covariance, dtype=float)[np.ix_(ok, ok)]
        corr = np.clip(cov / np.outer(se[ok], se[ok]), -1.0, 1.0)
        np.fill_diagonal(corr, 1.0)
    old = base.uncertainty.correlation
    if old is not None:
        gone = {f.split("[")[0] for f in fields} | {v.field.split("[")[0] for v in fitted}
        keep = [i for i, f in enumerate(old.fields) if f.split("[")[0] not in gone]
        if len(keep) >= 2:
            fields += [old.fields[i] for i in keep]
            corr = block_diag(corr, np.array(old.matrix)[np.ix_(keep, keep)])
    if len(fields) >= 2 and np.any(np.abs(corr - np.eye(len(fields))) > 1e-12):
        out["uncertainty.correlation"] = {
            "fields": fields,
            "matrix": [[six_digits(float(x)) for x in row] for row in corr],
        }
    return out
