"""``[model]``: the target model's geometry and weights, and its drafter's."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Self

from pydantic import Field, model_validator

from sim.scenario.sections.bounds import MAX_KERNELS_PER_LAYER, MAX_LAYERS, MAX_PARAMS, Params
from sim.scenario.sections.section import Section


class ModelSpec(Section):
    """The target model; optional while timings are given directly."""

    name: Annotated[str, Field(max_length=200)] = "unnamed"
    layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] | None = None
    hidden_size: Annotated[int, Field(gt=0, le=1_000_000)] | None = None
    experts: Annotated[int, Field(gt=0, le=100_000)] | None = None
    experts_per_token: Annotated[int, Field(gt=0, le=100_000)] | None = None
    # Hardware model (sim/hardware/, docs/reference.md §All-reduce): kernels one layer launches
    # (counting its all-reduces), tensor-parallel all-reduces per layer, bytes per
    # activation element in an all-reduce message, decoder layers of the drafter.
    kernels_per_layer: Annotated[int, Field(gt=0, le=MAX_KERNELS_PER_LAYER)] | None = None
    allreduces_per_layer: Annotated[int, Field(ge=0, le=100)] = 2
    activation_bytes: Annotated[int, Field(gt=0, le=16)] = 2
    draft_layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] = 1
    # Weights, for compute derived from a GPU preset when timings are missing (roofline):
    # params per layer outside the routed experts (attention, shared expert; the whole
    # layer of a dense model), per dense layer of a MoE model, per routed expert, in the
    # LM head, and in the drafter; bytes per param (experts may be quantized apart; the
    # drafter's own, e.g. a bf16 drafter on an FP8 target; None: the target's
    # ``weight_bytes_per_param``).
    dense_layers: Annotated[int, Field(ge=0, le=MAX_LAYERS)] = 0
    layer_params: Params | None = None
    dense_layer_params: Params | None = None
    expert_params: Params | None = None
    lm_head_params: Annotated[float, Field(ge=0, le=MAX_PARAMS)] = 0.0
    draft_params: Params | None = None
    weight_bytes_per_param: Annotated[float, Field(gt=0, le=16.0)] = 2.0
    expert_bytes_per_param: Annotated[float, Field(gt=0, le=16.0)] | None = None
    draft_bytes_per_param: Annotated[float, Field(gt=0, le=16.0)] | None = None
    # Serving (sim/hardware/batched.py): KV-cache bytes ONE tensor-parallel rank reads per
    # token of context in a target pass, all layers (MLA's latent KV is replicated on every
    # rank; GQA heads are split), and attention FLOPs per (query, key) pair per rank; the
    # drafter's KV bytes per token (default: the target's per decoder layer).
    kv_bytes_per_token: Annotated[float, Field(ge=0, le=1e12)] | None = None
    attention_flops_per_pair: Annotated[float, Field(ge=0, le=1e12)] | None = None
    draft_kv_bytes_per_token: Annotated[float, Field(ge=0, le=1e12)] | None = None
    # A hybrid target's recurrent state a request (linear attention, Gated DeltaNet, Mamba
    # layers), bytes per tensor-parallel rank, all layers: read once and written once per
    # token by every target pass (sim/model/recurrent_state.py); None or 0: none.
    state_bytes_per_request: Annotated[float, Field(ge=0, le=1e12)] | None = None
    # Its conv state beside it (the short causal convolution before each linear layer):
    # bytes per rank of one position of every linear layer's window (the conv channels /
    # TP x the model's dtype x the layers), and the window's positions in plain decoding
    # (the kernel size - 1; a server speculating k tokens keeps k more); given together.
    conv_state_bytes_per_position: Annotated[float, Field(ge=0, le=1e12)] | None = None
    conv_state_positions: Annotated[int, Field(gt=0, le=1024)] | None = None
    # The linear layers that keep those states (the rest of ``layers`` keep KV): vLLM's
    # block layout of a hybrid's pool reads it (sim/model/recurrent_state.py
    # ``BlockLayout``); None: the pool charges the states' bytes.
    linear_layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] | None = None

    @model_validator(mode="after")
    def _kernels_cover_allreduces(self) -> Self:
        segments = max(self.allreduces_per_layer, 1)
        if (
            self.kernels_per_layer is not None
            and self.kernels_per_layer < self.allreduces_per_layer + segments
        ):
            raise ValueError(
                f"kernels_per_layer ({self.kernels_per_layer}) must count the "
                f"{self.allreduces_per_layer} all-reduces and at least one compute kernel "
                "before each"
            )
        return self

    @model_validator(mode="after")
    def _conv_state_together(self) -> Self:
        if (self.conv_state_bytes_per_position is None) != (self.conv_state_positions is None):
            raise ValueError(
                "conv_state_bytes_per_position and conv_state_positions are given together "
                "(a position's bytes and the window's positions)"
            )
        return self

    @model_validator(mode="after")
    def _linear_layers_fit(self) -> Self:
        if self.linear_layers is not None and (
            self.layers is None or self.linear_layers >= self.layers
        ):
            raise ValueError(
                f"linear_layers ({self.linear_layers}) needs layers, and at least one "
                f"attention layer beside them (layers: {self.layers})"
            )
        return self

    @model_validator(mode="after")
    def _experts_consistent(self) -> Self:
        if self.experts_per_token is not None:
            if self.experts is None:
                raise ValueError("experts_per_token is set but experts is not")
            if self.experts_per_token > self.experts:
                raise ValueError(
                    f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})"
                )
        return self
