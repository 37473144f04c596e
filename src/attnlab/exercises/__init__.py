"""Automatic checks for the code exercises: ``check_x(x)`` accepts a correct answer and explains a wrong one."""

from attnlab.exercises._checking import ExerciseError
from attnlab.exercises.luong import check_local_p_weights, check_reinforce_loss
from attnlab.exercises.memory import check_sharpness, check_soft_lookup
from attnlab.exercises.ntm import check_sharpen, check_shift, check_write
from attnlab.exercises.pointer import (
    check_held_karp,
    check_masked_pointer,
    check_pointer_distribution,
    check_tour_length,
)
from attnlab.exercises.scoring import check_additive_score, check_padding_mask, check_scaled_dot_score
from attnlab.exercises.selfattn import check_multi_head_attention, check_parameterized_attention
from attnlab.exercises.seq2seq import check_alignment_accuracy, check_bahdanau_context, check_teacher_forcing

__all__ = ["ExerciseError", "check_sharpness", "check_soft_lookup"]
__all__ += ["check_additive_score", "check_padding_mask", "check_scaled_dot_score"]
__all__ += ["check_sharpen", "check_shift", "check_write"]
__all__ += ["check_held_karp", "check_masked_pointer", "check_pointer_distribution", "check_tour_length"]
__all__ += ["check_alignment_accuracy", "check_bahdanau_context", "check_teacher_forcing"]
__all__ += ["check_multi_head_attention", "check_parameterized_attention"]
__all__ += ["check_local_p_weights", "check_reinforce_loss"]
