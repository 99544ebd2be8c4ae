"""Claims = algorithm x MDP family x bound x test (import name ``theorylab.validations``)."""

from theorylab.validations.claim import Check, Report, Scale, Validation
from theorylab.validations.registry import (
    VALIDATIONS,
    list_validations,
    register_validation,
    validate,
)

__all__ = [
    "VALIDATIONS",
    "Check",
    "Report",
    "Scale",
    "Validation",
    "list_validations",
    "register_validation",
    "validate",
]
