"""Automatic checks for the code exercises: ``check_x(x)`` accepts a correct answer
and explains a wrong one."""

from attnlab.exercises._checking import ExerciseError
from attnlab.exercises.hard_attention import (
    check_reinforce_loss,
    check_reinforce_samples,
    check_straight_through,
)
from attnlab.exercises.luong import (
    check_local_p_weights,
    check_luong_step,
    check_window_mass,
    check_window_states,
)
from attnlab.exercises.memory import (
    check_query_training,
    check_sharpness,
    check_soft_lookup,
    check_topk_lookup,
)
from attnlab.exercises.ntm import (
    check_cosine_similarity,
    check_key_strength,
    check_sharpen,
    check_shift,
    check_write,
)
from attnlab.exercises.pointer import (
    check_beam_gaps,
    check_greedy_pointer,
    check_held_karp,
    check_masked_pointer,
    check_pointer_distribution,
    check_sort_length,
    check_tour_length,
    check_two_opt,
)
from attnlab.exercises.scoring import (
    check_additive_score,
    check_hidden_units_experiment,
    check_masked_softmax,
    check_padding_mask,
    check_scaled_dot_score,
    check_shepard_score,
)
from attnlab.exercises.selfattn import (
    check_head_experiment,
    check_multi_head_attention,
    check_parameterized_attention,
    check_scaled_simple_decoder,
    check_simple_attention,
    check_split_heads,
)
from attnlab.exercises.seq2seq import (
    check_alignment_accuracy,
    check_alignment_run,
    check_attention_map,
    check_bahdanau_context,
    check_greedy_decode,
    check_sequence_loss,
    check_source_reversal,
    check_teacher_forcing,
)
from attnlab.exercises.transformer import (
    check_alibi_bias,
    check_attention_masks,
    check_causal_mask,
    check_decoder_layer,
    check_learned_positions,
    check_norm_experiment,
    check_sinusoidal_positions,
)

__all__ = ["ExerciseError", "check_sharpness", "check_soft_lookup"]
__all__ += ["check_query_training", "check_topk_lookup"]
__all__ += ["check_additive_score", "check_padding_mask", "check_scaled_dot_score"]
__all__ += ["check_hidden_units_experiment", "check_masked_softmax"]
__all__ += ["check_shepard_score"]
__all__ += [
    "check_cosine_similarity",
    "check_key_strength",
    "check_sharpen",
    "check_shift",
    "check_write",
]
__all__ += [
    "check_held_karp",
    "check_masked_pointer",
    "check_pointer_distribution",
    "check_tour_length",
]
__all__ += [
    "check_beam_gaps",
    "check_greedy_pointer",
    "check_sort_length",
    "check_two_opt",
]
__all__ += [
    "check_alignment_accuracy",
    "check_attention_map",
    "check_bahdanau_context",
    "check_teacher_forcing",
]
__all__ += [
    "check_alignment_run",
    "check_greedy_decode",
    "check_sequence_loss",
    "check_source_reversal",
]
__all__ += [
    "check_head_experiment",
    "check_multi_head_attention",
    "check_parameterized_attention",
    "check_simple_attention",
    "check_scaled_simple_decoder",
    "check_split_heads",
]
__all__ += [
    "check_local_p_weights",
    "check_luong_step",
    "check_window_mass",
    "check_window_states",
]
__all__ += [
    "check_reinforce_loss",
    "check_reinforce_samples",
    "check_straight_through",
]
__all__ += [
    "check_alibi_bias",
    "check_attention_masks",
    "check_causal_mask",
    "check_decoder_layer",
    "check_learned_positions",
    "check_norm_experiment",
    "check_sinusoidal_positions",
]
