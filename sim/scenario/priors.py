"""Decay priors per draft method, from published per-position acceptance profiles.

When a scenario knows one accept length only, how the conditional rate falls with
position decides every answer at another ``num_steps``. The prior below is taken from
public per-position profiles (cumulative rates c_i = a_1 ... a_i as vLLM prints them; each
cited at its entry), per draft method:

* the **shape family** is the one with the lowest forward held-out error over the
  method's profiles (fit the first positions, predict the later ones;
  sim/model/profile_fit.py), not the best fit;
* the **decay** is that family's parameter fitted to each whole profile; the prior is
  their empirical distribution (median, 5-95% range; QMC draws use its quantile function).

Rising pooled profiles (decay > 1) are cut at 1, flat, which is the prior's optimistic
end: a rise in pooled per-position rates comes from mixing easy and hard requests, and does
not carry over to longer drafts; the MTP profile of vllm-project/vllm PR #48892 shows the
position-1 rate falling from 0.8359 at K = 1 to 0.7568 at K = 8 while its pooled
conditional rates rise with position.

None of these profiles is scored in the validation report (sim/validation/), whose
multi-K acceptance cases are all other measurements.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from sim.model.profile_fit import ProfileData, fit_profile, holdout_error

#: Draft methods a scenario can name (``acceptance.method``).
METHODS: tuple[str, ...] = ("eagle3", "eagle", "mtp", "draft_model", "generic")
#: Families the prior chooses among (flat has no decay to take a prior of).
PRIOR_FAMILIES: tuple[str, ...] = ("geometric", "step")


@dataclass(frozen=True)
class PublishedProfile:
    """One published per-position profile: cumulative rates at positions 1..n."""

    name: str
    method: str  # "eagle3" or "mtp"
    source: str
    cumulative: tuple[float, ...]
    decimals: int  # printed precision (sets the rounding standard error)

    def data(self) -> ProfileData:
        sigma = 10.0**-self.decimals / 12**0.5
        n = len(self.cumulative)
        return ProfileData(
            positions=tuple(range(1, n + 1)),
            cumulative=self.cumulative,
            cumulative_sigma=(sigma,) * n,
        )


#: Per-position profiles, copied from their sources (cumulative rates c_1..c_n).
PROFILES: tuple[PublishedProfile, ...] = (
    # --- EAGLE-3 (chain drafting)
    PublishedProfile(
        "MiniCPM3 + EAGLE-3, RTX 4090, 200 samples",
        "eagle3",
        "https://github.com/vllm-project/vllm/pull/24243",
        (0.58, 0.34, 0.22, 0.15, 0.11),
        2,
    ),
    PublishedProfile(
        "gpt-oss + EAGLE-3 (existing drafter), num_spec_tokens 5",
        "eagle3",
        "https://github.com/vllm-project/vllm/pull/42764",
        (0.622, 0.356, 0.203, 0.119, 0.060),
        3,
    ),
    PublishedProfile(
        "gpt-oss + EAGLE-3.1 (post-norm drafter), num_spec_tokens 5",
        "eagle3",
        "https://github.com/vllm-project/vllm/pull/42764",
        (0.610, 0.342, 0.202, 0.120, 0.072),
        3,
    ),
    PublishedProfile(
        "gpt-oss-120b + lmsys EAGLE-3, vLLM 0.17.1, H100",
        "eagle3",
        "https://huggingface.co/datasets/aimosprite/inference-bench-results "
        "(eagle3_tree_validate/notes.md)",
        (0.58, 0.31, 0.16, 0.08, 0.04, 0.02),
        2,
    ),
    PublishedProfile(
        "Qwen3-30B-A3B + EAGLE-3, k=5, RedHatAI speculator_benchmarks",
        "eagle3",
        "https://github.com/vllm-project/speculators/pull/610",
        (0.5858, 0.2991, 0.1491, 0.0790, 0.0423),
        4,
    ),
    PublishedProfile(
        "Qwen3-30B-A3B + EAGLE-3.1 fc-norm, k=5, RedHatAI speculator_benchmarks",
        "eagle3",
        "https://github.com/vllm-project/speculators/pull/610",
        (0.5890, 0.3028, 0.1558, 0.0846, 0.0481),
        4,
    ),
    PublishedProfile(
        "MiniMax-M3 + EAGLE-3, B300, 3 spec tokens (printed as approximate)",
        "eagle3",
        "https://github.com/SemiAnalysisAI/InferenceX/pull/1737",
        (0.72, 0.50, 0.36),
        2,
    ),
    PublishedProfile(
        "Qwen3-30B-A3B + EAGLE-3, vLLM-Ascend, K=3",
        "eagle3",
        "https://github.com/vllm-project/vllm-ascend/issues/5825",
        (0.62, 0.40, 0.27),
        2,
    ),
    # SpecDecode-Bench/simulator @ 2fdccbd61b62be339fb85fd90caf43f5e8392aa6,
    # data/llama3.1-8B/combined_{gsm8k,sharegpt,instructcoder,cnn}.jsonl, field
    # acc_eagle.acc_len, walked cycle by cycle with K = 8 (positions 1-7; arXiv 2601.11580).
    PublishedProfile(
        "Llama-3.1-8B + EAGLE-3, H100, gsm8k (SpecDecode-Bench traces)",
        "eagle3",
        "https://github.com/SpecDecode-Bench/simulator",
        (0.663, 0.427, 0.269, 0.175, 0.108, 0.070, 0.046),
        3,
    ),
    PublishedProfile(
        "Llama-3.1-8B + EAGLE-3, H100, sharegpt (SpecDecode-Bench traces)",
        "eagle3",
        "https://github.com/SpecDecode-Bench/simulator",
        (0.595, 0.347, 0.221, 0.151, 0.110, 0.082, 0.062),
        3,
    ),
    PublishedProfile(
        "Llama-3.1-8B + EAGLE-3, H100, instructcoder (SpecDecode-Bench traces)",
        "eagle3",
        "https://github.com/SpecDecode-Bench/simulator",
        (0.591, 0.366, 0.250, 0.186, 0.142, 0.112, 0.089),
        3,
    ),
    PublishedProfile(
        "Llama-3.1-8B + EAGLE-3, H100, cnn (SpecDecode-Bench traces)",
        "eagle3",
        "https://github.com/SpecDecode-Bench/simulator",
        (0.628, 0.390, 0.249, 0.164, 0.112, 0.081, 0.058),
        3,
    ),
    # --- MTP heads used as drafters
    PublishedProfile(
        "DeepSeek-V4 MTP, K=2 (one layer reused), concurrency 1",
        "mtp",
        "https://github.com/vllm-project/vllm/pull/41044",
        (0.7694, 0.3807),
        4,
    ),
    PublishedProfile(
        "multi-layer MTP speculator (MRV2), K=8, GSM8K",
        "mtp",
        "https://github.com/vllm-project/vllm/pull/48892",
        (0.7568, 0.6011, 0.4976, 0.4113, 0.3538, 0.2980, 0.2608, 0.2229),
        4,
    ),
    PublishedProfile(
        "Gemma-4 26B-A4B NVFP4 MTP drafter, K=4, DGX Spark",
        "mtp",
        "https://github.com/eugr/spark-vllm-docker/issues/343",
        (0.844, 0.599, 0.385, 0.271),
        3,
    ),
    PublishedProfile(
        "Gemma-4 26B-A4B NVFP4 MTP drafter, K=2, DGX Spark",
        "mtp",
        "https://github.com/eugr/spark-vllm-docker/issues/343",
        (0.766, 0.545),
        3,
    ),
    PublishedProfile(
        "GLM-5 w4a8 MTP, K=3, vLLM-Ascend (engine pid 2523786)",
        "mtp",
        "https://github.com/vllm-project/vllm-ascend/issues/9803",
        (0.938, 0.769, 0.572),
        3,
    ),
    PublishedProfile(
        "GLM-5 w4a8 MTP, K=3, vLLM-Ascend (engine pid 2523785)",
        "mtp",
        "https://github.com/vllm-project/vllm-ascend/issues/9803",
        (0.877, 0.749, 0.610),
        3,
    ),
)

#: Methods without a published chain per-position profile take the pooled prior.
POOLED_METHODS: dict[str, str] = {
    "eagle": "no published EAGLE-1/2 chain per-position profile was found",
    "draft_model": "no published draft-model per-position profile was found",
    "generic": "no draft method given (acceptance.method)",
}


@dataclass(frozen=True)
class DecayPrior:
    """The decay prior of one draft method.

    ``decays`` are the fitted, flat-capped decays of the profiles, sorted; ``median`` the
    nominal value and ``low``/``high`` the 5% and 95% quantiles.
    """

    method: str
    shape: str
    decays: tuple[float, ...]
    sources: tuple[str, ...]
    note: str

    @property
    def median(self) -> float:
        return float(np.median(self.decays))

    @property
    def low(self) -> float:
        return self.quantile(0.05)

    @property
    def high(self) -> float:
        return self.quantile(0.95)

    def quantile(self, u: np.ndarray | float) -> np.ndarray | float:
        """The prior's quantile function (linear between the sorted decays)."""
        values = np.quantile(np.asarray(self.decays), u)
        return float(values) if np.ndim(values) == 0 else values

    @property
    def reason(self) -> str:
        return (
            f"{self.method} decay prior: {self.shape} shape fitted to {len(self.decays)} "
            f"published per-position profiles, median {self.median:.3f}, 5-95% "
            f"{self.low:.3f}-{self.high:.3f} (flat 1 the optimistic end); {self.note}"
        )


def _profiles_of(method: str) -> tuple[PublishedProfile, ...]:
    if method in POOLED_METHODS:
        return PROFILES
    return tuple(p for p in PROFILES if p.method == method)


#: The family each method's prior uses: the one with the lowest forward held-out error
#: over its profiles (``family_holdout``; tests/scenario/test_priors.py recomputes it, so
#: this table is a cache of that computation, which takes ~1 s, not a choice).
PRIOR_FAMILY: dict[str, str] = {"eagle3": "step", "mtp": "step", "pooled": "step"}


def _group(method: str) -> str:
    return "pooled" if method in POOLED_METHODS else method


def family_holdout(method: str) -> dict[str, float]:
    """Mean forward held-out error (sim/model/profile_fit.py) of each candidate family
    over the profiles of ``method``."""
    profiles = _profiles_of(method)
    out: dict[str, float] = {}
    for family in PRIOR_FAMILIES:
        errors = [holdout_error(family, p.data()) for p in profiles]
        out[family] = float(np.mean([e for e in errors if e is not None]))
    return out


@functools.cache
def decay_prior(method: str, family: str | None = None) -> DecayPrior:
    """The decay prior of ``method`` (one of ``METHODS``) for ``family`` (default: the
    method's held-out choice, ``PRIOR_FAMILY``), fitted once from ``PROFILES``."""
    if method not in METHODS:
        raise ValueError(f"unknown draft method {method!r}; known: {', '.join(METHODS)}")
    profiles = _profiles_of(method)
    shape = family or PRIOR_FAMILY[_group(method)]
    if shape not in PRIOR_FAMILIES:
        raise ValueError(f"no decay prior for shape {shape!r}")
    decays = sorted(min(1.0, fit_profile(shape, p.data()).decay) for p in profiles)
    note = (
        POOLED_METHODS[method] + ": every method's profiles pooled"
        if method in POOLED_METHODS
        else f"{PRIOR_FAMILY[_group(method)]} has the lowest held-out error on them"
    )
    return DecayPrior(
        method, shape, tuple(decays), tuple(dict.fromkeys(p.source for p in profiles)), note
    )


#: Profiles shorter than this cannot show how a shape fitted to positions 1-2 misses later.
SHAPE_ERROR_MIN_POSITIONS = 4


@dataclass(frozen=True)
class ShapeError:
    """How far real profiles stray from the method's shape past the fitted positions.

    For each published profile of ``SHAPE_ERROR_MIN_POSITIONS`` or more positions, the
    method's family is fitted to positions 1-2 and the later conditional rates are compared
    with the fit: their log ratio, per position beyond the fit, is one log rho per profile
    (least squares through the origin). ``tau`` is the root mean square of those log rho:
    a draw's rates beyond the measured positions are multiplied by rho^(i - measured) with
    log rho = -|Normal(0, tau)|: only the falling side, since pooled profiles that rise do
    not carry over to longer drafts (see the module docstring), which keeps flat the
    optimistic end.
    """

    method: str
    shape: str
    log_rhos: tuple[float, ...]

    @property
    def tau(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.log_rhos)))) if self.log_rhos else 0.0

    @property
    def median(self) -> float:
        """The median of -|Normal(0, tau)|: the nominal tilt of a derived shape."""
        return -0.6744897501960817 * self.tau

    @property
    def reason(self) -> str:
        return (
            f"shape error past the measured positions: {self.shape} fitted to positions 1-2 "
            f"of {len(self.log_rhos)} published {self.method} profiles misses their later "
            f"rates by a factor rho per position, log rho RMS {self.tau:.3f} (the falling "
            "side kept)"
        )


@functools.cache
def shape_error(method: str) -> ShapeError:
    """The shape error of ``method``'s prior family (see ``ShapeError``)."""
    prior = decay_prior(method)
    out = []
    for p in _profiles_of(method):
        c = np.asarray(p.cumulative)
        if c.size < SHAPE_ERROR_MIN_POSITIONS:
            continue
        fit = fit_profile(prior.shape, p.data().upto(3))
        observed = c / np.concatenate([[1.0], c[:-1]])
        predicted = fit.rates(c.size)
        i = np.arange(3, c.size + 1) - 2.0  # positions past the fitted two
        logs = np.log(observed[2:] / predicted[2:])
        out.append(float(np.sum(i * logs) / np.sum(i * i)))
    return ShapeError(method, prior.shape, tuple(out))
