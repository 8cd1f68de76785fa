"""Reversible per-column encoders fitted only on public or DP metadata (issue 2 item 5; seed 000 §4.2).

Entry point: :class:`TableTransformer`. Layout of its output: :class:`Span` (``output_info``). CTGAN-style
condition vectors from DP frequencies: :class:`ConditionSampler`.
"""

from dpsynth.data.transformers.base import ACTIVATIONS, ROLES, ColumnTransformer, Span
from dpsynth.data.transformers.categorical import CATEGORICAL_METHODS, CategoricalTransformer
from dpsynth.data.transformers.conditions import ConditionBatch, ConditionSampler
from dpsynth.data.transformers.mode_specific import ModeSpecificEncoder
from dpsynth.data.transformers.numeric import NUMERIC_METHODS, NumericTransformer
from dpsynth.data.transformers.table import ColumnInfo, TableTransformer

__all__ = [
    "ACTIVATIONS",
    "ROLES",
    "CATEGORICAL_METHODS",
    "NUMERIC_METHODS",
    "Span",
    "ColumnInfo",
    "ColumnTransformer",
    "CategoricalTransformer",
    "NumericTransformer",
    "ModeSpecificEncoder",
    "TableTransformer",
    "ConditionSampler",
    "ConditionBatch",
]
