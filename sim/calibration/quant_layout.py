"""The bytes a weight of each module, from a config.json's ``quantization_config`` (read,
never fetched): which modules a layout quantizes and how many bits a quantized weight
stores, its scales (and zero points) counted from the group size.

Layouts read (field names as the checkpoints spell them):

- **compressed-tensors** (``quant_method: compressed-tensors``; llm-compressor's, Kimi-K2's):
  ``config_groups.*.weights`` (``num_bits``, ``type``, ``strategy``, ``group_size``,
  ``block_structure``, ``symmetric``, ``scale_dtype``), each group's ``targets`` and the
  ``ignore`` list, matched as vLLM's compressed_tensors ``should_ignore_layer`` /
  ``find_matched_target`` do: a ``re:`` entry is a regex matched from the name's start, any
  other entry the exact name, ``Linear`` every linear layer. Group scales are stored in
  ``scale_dtype``, else 8 bits for the ``nvfp4``/``mxfp4`` pack formats (FP8 E4M3, E8M0),
  else the model's dtype (compressed-tensors keeps a scale in the weight's dtype); an
  asymmetric int group adds a ``num_bits`` zero point.
- **ModelOpt** (``quant_method: modelopt``; nvidia's FP8 and FP4 checkpoints): ``quant_algo``
  ``FP8`` (and ``FP8_PER_CHANNEL_PER_TOKEN``, ``FP8_PB_WO``) 8 bits, ``NVFP4`` /
  ``W4A16_NVFP4`` 4 bits + an FP8 scale every ``group_size`` (16) weights, ``MIXED_PRECISION``
  each ``quantized_layers`` entry its own; ``ignore`` (``exclude_modules`` in the older
  layout) matched as vLLM's modelopt ``is_layer_excluded`` does (exact, substring, wildcard).
- **mxfp4** (``quant_method: mxfp4``; gpt-oss): the routed experts only, 4 bits + an E8M0 scale
  every 32 weights (transformers quantizer_mxfp4.py ``param_element_size``: 0.5 + 1/32 bytes),
  unless ``modules_to_not_convert`` names them; everything else at the model's dtype.
- **fp8** (``quant_method: fp8``, or ``fmt: e4m3`` without ``bits``; DeepSeek-V3/R1's and
  Qwen3's FP8 checkpoints, vLLM's ``Fp8Config``): every decoder linear layer and the routed
  experts at 8 bits, + one FP32 scale (``weight_scale_inv``) a ``weight_block_size`` block
  (128 x 128: 8 + 32/16384 bits), a scale a tensor without one (left out); the modules
  ``modules_to_not_convert`` (``ignored_layers``) names at the model's dtype (matched as
  ``should_convert_module``: the module or a parent).
- **bits** (GPTQ, AWQ and the other ``bits``/``w_bit`` layouts): every decoder linear layer
  at ``bits`` + a 16-bit scale every ``group_size`` weights + a ``bits`` zero point (GPTQ's
  ``qzeros`` always, AWQ's unless ``zero_point`` is false, others unless ``sym``); the LM
  head only with ``lm_head: true``; AWQ's ``modules_to_not_convert`` (substring).

Whatever the layout, routers and (bits layouts aside) the LM head stay at the model's dtype:
vLLM builds routers with ``quant_config=None`` (deepseek_v2.py, qwen3_moe.py, gpt_oss.py) and
its ``ParallelLMHead`` is no ``LinearBase`` a compressed-tensors, ModelOpt or FP8 config
quantizes (``Fp8Config.get_quant_method`` quantizes ``LinearBase`` and ``FusedMoE`` only; an
FP8 checkpoint stores ``lm_head.weight`` in bf16, without a ``weight_scale_inv``).
Per-tensor and per-output-row scales (one a row of thousands of weights, under 0.2% of the
bytes), GPTQ's ``g_idx`` and NVFP4's per-tensor FP32 scale are left out. A layout or field
not read here is refused in one line (``SpecsimError``), never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any

from sim.calibration.checkpoint_modules import Part
from sim.errors import SpecsimError

__all__ = ["LM_HEAD", "ROUTED", "ROUTER", "Layout", "Width", "read_layout"]

#: ``Part.kind`` of the routers and of the LM head (kept at the model's dtype), and of the
#: routed experts.
ROUTER = "router"
LM_HEAD = "LM head"
ROUTED = "routed experts"

#: Bits of a stored scale by its ``scale_dtype``.
SCALE_BITS = {
    "float8_e4m3fn": 8,
    "float8_e8m0fnu": 8,
    "uint8": 8,
    "bfloat16": 16,
    "float16": 16,
    "float32": 32,
}

#: ModelOpt's algorithms stored at 8 bits a weight (a scale a tensor, row or 128 x 128 block).
MODELOPT_FP8 = frozenset({"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"})
#: ModelOpt's NVFP4 algorithms: 4-bit E2M1 with an FP8 E4M3 scale every ``group_size``.
MODELOPT_NVFP4 = frozenset({"NVFP4", "W4A16_NVFP4"})
#: NVFP4's group when the config states none (vLLM modelopt.py: 16).
NVFP4_GROUP = 16
#: MXFP4's group and scale (OCP microscaling: an E8M0 exponent every 32 weights).
MXFP4_GROUP, MXFP4_SCALE_BITS = 32, 8
#: Bits of a GPTQ/AWQ group scale (float16).
GPTQ_SCALE_BITS = 16
#: Bits of a block-FP8 checkpoint's scale a block (``weight_scale_inv``, float32).
FP8_BLOCK_SCALE_BITS = 32


@dataclass(frozen=True, slots=True)
class Width:
    """Bytes a stored weight and how they were derived."""

    bytes_per_param: float
    label: str


def _bits_width(bits: float, how: str) -> Width:
    return Width(bits / 8.0, f"{bits:g} bits: {how}")


#: One projection's width: (its names, its part's kind) -> Width.
Rule = Callable[[tuple[str, ...], str], Width]


@dataclass(frozen=True, slots=True)
class Layout:
    """A ``quantization_config`` read: its method, the fields read (for origins), the
    width of each projection (``rule``), and its module patterns with how one matches a
    name (``unmatched`` lists those that match no module of the model)."""

    method: str
    fields: str
    rule: Rule
    patterns: tuple[str, ...]
    match: Callable[[str, str], bool]

    def unmatched(self, parts: list[Part]) -> tuple[str, ...]:
        """The patterns that match no projection of ``parts`` (another model's modules: a
        vision tower, an MTP layer; said in the origin, never read)."""
        names = [n for part in parts for projection in part.modules for n in projection]
        return tuple(p for p in self.patterns if not any(self.match(p, n) for n in names))

    def width(self, part: Part, source: str) -> Width:
        """The width of ``part``'s weights; SpecsimError when its projections differ (a
        part is priced at one width)."""
        widths = [self.rule(names, part.kind) for names in part.modules]
        if len({w.bytes_per_param for w in widths}) > 1:
            said = "; ".join(sorted({w.label for w in widths}))
            raise SpecsimError(
                f"{self.method}: the {part.kind} projections of one layer are stored at "
                f"different widths ({said}); specsim prices a part of a layer at one width: "
                "write model.weight_bytes_per_param (and model.expert_bytes_per_param) by hand",
                source=source,
                field="quantization_config",
            )
        return widths[0]


def _field(source: str, name: str, why: str) -> SpecsimError:
    return SpecsimError(why, source=source, field=f"quantization_config.{name}")


def _pos_int(value: Any, source: str, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 2**16:
        raise _field(source, name, f"must be an integer from 1 to 65,536, got {value!r}")
    return value


def _strings(value: Any, source: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _field(source, name, f"must be a list of module names, got {value!r}")
    return tuple(value)


def _dtype_bits(name: Any) -> int | None:
    return SCALE_BITS.get(str(name).removeprefix("torch.")) if name is not None else None


# -- compressed-tensors ---------------------------------------------------------------


def _ct_match(pattern: str, name: str) -> bool:
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    return pattern == name


def _ct_group_width(
    weights: Any, group_format: str, dense: Width, source: str, where: str
) -> Width:
    """The width of one ``config_groups`` entry's weights (``where`` names it)."""
    if not isinstance(weights, dict):
        raise _field(source, where, f"must be a mapping of the weights' scheme, got {weights!r}")
    bits = _pos_int(weights.get("num_bits"), source, f"{where}.num_bits")
    kind = str(weights.get("type", "int"))
    strategy = str(weights.get("strategy") or "tensor")
    read = f"{where}: num_bits {bits}, type {kind}, strategy {strategy}"
    if strategy in ("tensor", "channel", "token"):
        return _bits_width(bits, f"{read}; a scale a tensor or an output row, left out")
    declared = _dtype_bits(weights.get("scale_dtype"))
    if declared is not None:
        scale_bits, scale_why = declared, f"scale_dtype {weights['scale_dtype']}"
    elif "nvfp4" in group_format or "mxfp4" in group_format:
        scale_bits, scale_why = 8, f"format {group_format}: 8-bit scales"
    else:
        scale_bits = round(dense.bytes_per_param * 8)
        scale_why = f"scales in the model's dtype, {dense.label}"
    if strategy in ("group", "tensor_group"):
        group = _pos_int(weights.get("group_size"), source, f"{where}.group_size")
        total = bits + scale_bits / group
        how = f"{read}, group_size {group}; + a {scale_bits}-bit scale every {group} ({scale_why})"
        if weights.get("symmetric") is False and kind == "int":
            total += bits / group
            how += f", + a {bits}-bit zero point every {group} (symmetric false)"
        return _bits_width(total, how)
    if strategy == "block":
        block = weights.get("block_structure")
        name = f"{where}.block_structure"
        if not (isinstance(block, list) and len(block) == 2):
            raise _field(source, name, f"must be [rows, columns], got {block!r}")
        rows, cols = _pos_int(block[0], source, name), _pos_int(block[1], source, name)
        how = f"{read}, block {rows} x {cols}; + a {scale_bits}-bit scale a block ({scale_why})"
        return _bits_width(bits + scale_bits / (rows * cols), how)
    raise _field(source, f"{where}.strategy", f"{strategy!r}: not a strategy specsim init reads")


def _compressed_tensors(quant: dict[str, Any], dense: Width, source: str) -> Layout:
    groups = quant.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise _field(source, "config_groups", "missing: the quantized groups and their weights")
    top_format = str(quant.get("format") or "")
    read: list[tuple[tuple[str, ...], Width]] = []
    for name, group in groups.items():
        where = f"config_groups.{name}"
        if not isinstance(group, dict):
            raise _field(source, where, f"must be a mapping, got {group!r}")
        targets = _strings(group.get("targets"), source, f"{where}.targets")
        if group.get("weights") is None:
            continue  # activations only: the weights stay at the model's dtype
        fmt = str(group.get("format") or top_format)
        width = _ct_group_width(group["weights"], fmt, dense, source, f"{where}.weights")
        read.append((targets, width))
    ignore = _strings(quant.get("ignore"), source, "ignore")

    def rule(names: tuple[str, ...], kind: str) -> Width:
        if kind in (ROUTER, LM_HEAD) or any(_ct_match(p, n) for p in ignore for n in names):
            return dense
        for exact in (True, False):  # an exact name wins over a regex, both over a class
            for targets, width in read:
                hits = [t for t in targets if t.startswith("re:") != exact]
                if any(_ct_match(t, n) for t in hits for n in names):
                    return width
        return next((w for targets, w in read if "Linear" in targets), dense)

    return Layout("compressed-tensors", "config_groups, ignore", rule, ignore, _ct_match)


# -- ModelOpt ------------------------------------------------------------------------


def _excludes(pattern: str, name: str) -> bool:
    return pattern in name or fnmatch(name, pattern)


def _modelopt_excluded(patterns: tuple[str, ...], name: str) -> bool:
    return any(_excludes(p, name) for p in patterns)


#: vLLM's fused projections: a ``quantized_layers`` entry of one names its parts.
FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def _covers(module: str, name: str) -> bool:
    """A ``quantized_layers`` entry covers the module of that name, its children, and the
    parts of a fused projection it names (``self_attn.qkv_proj``: q, k and v)."""
    if name == module or name.startswith(module + "."):
        return True
    parent, _, last = module.rpartition(".")
    return any(name == f"{parent}.{part}" for part in FUSED.get(last, ()))


def _modelopt_algo(algo: Any, group: Any, source: str, where: str, said: str) -> Width:
    """The width of ModelOpt algorithm ``algo`` (field ``where``, ``said`` in the label)."""
    name = str(algo).upper()
    if name in MODELOPT_FP8:
        return _bits_width(8, f"{said} {name}; its scales (a tensor, row or block) left out")
    if name in MODELOPT_NVFP4:
        size = NVFP4_GROUP if group is None else _pos_int(group, source, "group_size")
        return _bits_width(
            4 + 8 / size, f"{said} {name}: 4-bit E2M1 + an FP8 scale every {size} weights"
        )
    raise _field(
        source,
        where,
        f"{algo!r}: specsim init reads {', '.join(sorted(MODELOPT_FP8 | MODELOPT_NVFP4))} "
        "and MIXED_PRECISION",
    )


def _modelopt(quant: dict[str, Any], dense: Width, source: str) -> Layout:
    nested = quant.get("quantization")
    body: dict[str, Any] = nested if isinstance(nested, dict) else quant
    algo = body.get("quant_algo")
    key = "exclude_modules" if "exclude_modules" in body else "ignore"
    excluded = _strings(body.get(key), source, key)
    if str(algo).upper() == "MIXED_PRECISION":
        layers = body.get("quantized_layers")
        if not isinstance(layers, dict) or not layers:
            raise _field(source, "quantized_layers", "missing: MIXED_PRECISION's modules")
        per: dict[str, Width] = {}
        for module, spec in layers.items():
            where = f"quantized_layers.{module}"
            if not isinstance(spec, dict):
                raise _field(source, where, f"must be a mapping, got {spec!r}")
            algo_where = f"{where}.quant_algo"
            per[module] = _modelopt_algo(
                spec.get("quant_algo"), spec.get("group_size"), source, algo_where, "quant_algo"
            )

        def mixed(names: tuple[str, ...], kind: str) -> Width:
            if kind in (ROUTER, LM_HEAD) or any(_modelopt_excluded(excluded, n) for n in names):
                return dense
            for module, width in per.items():
                if any(_covers(module, n) for n in names):
                    return width
            return dense

        def either(pattern: str, name: str) -> bool:
            return _covers(pattern, name) if pattern in per else _excludes(pattern, name)

        patterns = (*per, *excluded)
        fields = f"quantized_layers, {key}"
        return Layout("modelopt MIXED_PRECISION", fields, mixed, patterns, either)
    width = _modelopt_algo(algo, body.get("group_size"), source, "quant_algo", "quant_algo")

    def uniform(names: tuple[str, ...], kind: str) -> Width:
        if kind in (ROUTER, LM_HEAD) or any(_modelopt_excluded(excluded, n) for n in names):
            return dense
        return width

    fields = f"quant_algo, group_size, {key}"
    return Layout(f"modelopt {str(algo).upper()}", fields, uniform, excluded, _excludes)


# -- mxfp4 ---------------------------------------------------------------------------


def _mxfp4(quant: dict[str, Any], dense: Width, source: str) -> Layout:
    keep = _strings(quant.get("modules_to_not_convert"), source, "modules_to_not_convert")
    width = _bits_width(
        4 + MXFP4_SCALE_BITS / MXFP4_GROUP,
        f"mxfp4: 4-bit E2M1 + an E8M0 scale every {MXFP4_GROUP} weights",
    )

    def rule(names: tuple[str, ...], kind: str) -> Width:
        kept = any(_keeps(p, n) for p in keep for n in names)
        return width if kind == ROUTED and not kept else dense

    return Layout("mxfp4", "modules_to_not_convert (the routed experts only)", rule, keep, _keeps)


def _keeps(pattern: str, name: str) -> bool:
    """transformers' ``should_convert_module``: a pattern names the module or a parent."""
    return pattern in name or fnmatch(name, pattern) or fnmatch(name, pattern + ".*")


# -- bits (GPTQ, AWQ, ...) -------------------------------------------------------------


def _bits(quant: dict[str, Any], bits_field: str, dense: Width, source: str) -> Layout:
    method = str(quant.get("quant_method", "")).lower() or "bits"
    bits = _pos_int(quant[bits_field], source, bits_field)
    if quant.get("dynamic"):
        raise _field(source, "dynamic", "per-module overrides: not read by specsim init")
    group = quant.get("group_size", quant.get("q_group_size"))
    read = f"{method}: {bits_field} {bits}"
    if group is None or group == -1:
        width = _bits_width(bits, f"{read}, a scale an output row, left out")
    else:
        size = _pos_int(group, source, "group_size")
        zero = (
            True
            if "gptq" in method
            else quant.get("zero_point", True) is not False
            if "awq" in method
            else quant.get("sym") is False
        )
        total = bits + GPTQ_SCALE_BITS / size + (bits / size if zero else 0.0)
        how = f"{read}, group_size {size}; + a {GPTQ_SCALE_BITS}-bit scale" + (
            f" and a {bits}-bit zero point" if zero else ""
        )
        width = _bits_width(total, f"{how} every {size} weights")
    keep = _strings(quant.get("modules_to_not_convert"), source, "modules_to_not_convert")
    head = quant.get("lm_head") is True

    def rule(names: tuple[str, ...], kind: str) -> Width:
        if kind == ROUTER or (kind == LM_HEAD and not head):
            return dense
        return dense if any(p in n for p in keep for n in names) else width

    return Layout(method, f"{bits_field}, group_size", rule, keep, _contains)


def _contains(pattern: str, name: str) -> bool:
    return pattern in name


def _bits_field(quant: dict[str, Any]) -> str | None:
    return next((f for f in ("bits", "w_bit") if quant.get(f) is not None), None)


def _is_fp8(quant: dict[str, Any]) -> bool:
    """An FP8 checkpoint's layout (``quant_method`` naming fp8, or ``fmt`` e4m3, without
    ``bits``), not one of the layouts read apart."""
    method = str(quant.get("quant_method", "")).lower()
    plain = method not in ("compressed-tensors", "mxfp4") and not method.startswith("modelopt")
    return plain and _bits_field(quant) is None and ("fp8" in method or quant.get("fmt") == "e4m3")


def _fp8(quant: dict[str, Any], dense: Width, source: str) -> Layout:
    key = "ignored_layers" if "ignored_layers" in quant else "modules_to_not_convert"
    keep = _strings(quant.get(key), source, key)
    block = quant.get("weight_block_size")
    if block is None:
        width = _bits_width(8, "fp8: a scale a tensor, left out")
    else:
        name = "weight_block_size"
        if not (isinstance(block, list) and len(block) == 2):
            raise _field(source, name, f"must be [rows, columns], got {block!r}")
        rows, cols = _pos_int(block[0], source, name), _pos_int(block[1], source, name)
        width = _bits_width(
            8 + FP8_BLOCK_SCALE_BITS / (rows * cols),
            f"fp8, weight_block_size {rows} x {cols}; + a {FP8_BLOCK_SCALE_BITS}-bit scale a "
            "block (weight_scale_inv, float32)",
        )

    def rule(names: tuple[str, ...], kind: str) -> Width:
        if kind in (ROUTER, LM_HEAD) or any(_keeps(p, n) for p in keep for n in names):
            return dense
        return width

    return Layout("fp8", f"weight_block_size, {key}", rule, keep, _keeps)


def read_layout(quant: dict[str, Any], dense: Width, source: str) -> Layout:
    """The layout of ``quantization_config`` ``quant`` (``dense``: the model's unquantized
    width); SpecsimError naming the field for one not read."""
    method = str(quant.get("quant_method", "")).lower()
    if method == "compressed-tensors":
        return _compressed_tensors(quant, dense, source)
    if method.startswith("modelopt"):  # vLLM's spellings: modelopt, modelopt_fp4, modelopt_mixed
        return _modelopt(quant, dense, source)
    if method == "mxfp4":
        return _mxfp4(quant, dense, source)
    if _is_fp8(quant):
        return _fp8(quant, dense, source)
    bits_field = _bits_field(quant)
    if bits_field is not None:
        return _bits(quant, bits_field, dense, source)
    raise SpecsimError(
        f"quant_method {method or 'unstated'!r} without bits: its bytes a weight are not known "
        "to specsim init (it reads compressed-tensors, modelopt, mxfp4, fp8 and bits layouts); "
        "write the scenario's model.weight_bytes_per_param by hand",
        source=source,
        field="quantization_config",
    )
