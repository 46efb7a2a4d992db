"""The speculative algorithm: one member per run, chosen at start-up."""

from enum import Enum


class Algo(Enum):
    NONE = "none"
    DRAFT = "draft"

    def is_some(self) -> bool:
        return self != Algo.NONE
