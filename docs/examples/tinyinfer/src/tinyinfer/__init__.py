"""tinyinfer: a toy inference library whose samplers plugins can add or replace."""

from attn.registry import Backend, BackendEnum


class Sampler(Backend):
    """What every sampler provides."""


class GreedySampler(Sampler):
    """Always the most likely token."""


class TopKSampler(Sampler):
    """One of the k most likely tokens."""


class SamplerEnum(
    BackendEnum,
    group="tinyinfer.samplers",
    host="tinyinfer",
    interface=Sampler,
    noun="sampler",
    register_hint="attn.registry.register(SamplerEnum.NAME, 'module:Class')",
):
    """tinyinfer's samplers; plugins add more in the ``tinyinfer.samplers`` group."""

    GREEDY = "tinyinfer:GreedySampler"
    TOP_K = "tinyinfer:TopKSampler"
