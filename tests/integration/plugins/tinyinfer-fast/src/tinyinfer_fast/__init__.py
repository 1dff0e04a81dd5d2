"""Samplers of tinyinfer-fast."""

from tinyinfer import Sampler


class FastGreedySampler(Sampler):
    """A faster GREEDY."""


class FastSampler(Sampler):
    """A sampler tinyinfer does not ship."""
