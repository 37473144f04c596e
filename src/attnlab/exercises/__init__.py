"""Automatic checks for the code exercises: ``check_x(x)`` accepts a correct answer and explains a wrong one."""

from attnlab.exercises._checking import ExerciseError
from attnlab.exercises.memory import check_sharpness, check_soft_lookup
from attnlab.exercises.ntm import check_shift, check_sharpen, check_write
from attnlab.exercises.scoring import check_additive_score, check_padding_mask, check_scaled_dot_score

__all__ = ["ExerciseError", "check_sharpness", "check_soft_lookup"]
__all__ += ["check_additive_score", "check_padding_mask", "check_scaled_dot_score"]
__all__ += ["check_sharpen", "check_shift", "check_write"]
