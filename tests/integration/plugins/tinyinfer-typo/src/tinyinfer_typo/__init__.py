"""The sampler of tinyinfer-typo, which tinyinfer never sees."""

from tinyinfer import Sampler


class TypoSampler(Sampler):
    """Declared in a misspelt group."""
