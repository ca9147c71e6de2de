"""Greedy decoding through ONNX Runtime with the graphs of :mod:`exporter.generation.export`: each pass's cache fed
to the next by name (``present.*`` out becomes ``past_key_values.*`` in), the attention mask grown by one attended
position per new token, as ``generate`` grows it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

# (the chosen tokens (batch, 1), the step's index, the previous pass's outputs) -> the next pass's outputs
NextPass = Callable[[np.ndarray, int, list[np.ndarray]], list[np.ndarray]]


def greedy(outputs: list[np.ndarray], steps: int, step: NextPass) -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens from a first pass's ``outputs`` (logits first): each step takes the last
    position's argmax, and ``step(tokens (batch, 1), index, outputs)`` runs the next pass. Returns the tokens
    (batch, steps) and each step's logits (batch, vocabulary)."""
    tokens, logits = [], []
    for index in range(steps):
        last = outputs[0][:, -1]
        logits.append(last)
        tokens.append(last.argmax(-1))
        if index + 1 < steps:
            outputs = step(tokens[-1][:, None].astype(np.int64), index, outputs)
    return np.stack(tokens, 1), logits


def output_names(session) -> list[str]:
    return [output.name for output in session.get_outputs()]


def as_past(names: list[str], outputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """A pass's cache outputs (``present.*``) as the next pass's cache inputs of the same names
    (``past_key_values.*``): fed by name, so the graph's order of its inputs is never trusted."""
    prefix = "present."
    return {"past_key_values." + name[len(prefix):]: value
            for name, value in zip(names, outputs, strict=True) if name.startswith(prefix)}


def prompt_mask(prompt: torch.Tensor, attention_mask: torch.Tensor | None) -> np.ndarray:
    """The prompt's mask as int64 (ones where none is given)."""
    return np.ones(tuple(prompt.shape), np.int64) if attention_mask is None else attention_mask.numpy().astype(np.int64)


def greedy_through_onnx(prefill_path: str, decode_path: str, prompt: torch.Tensor, steps: int,
                        attention_mask: torch.Tensor | None = None,
                        provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime: the prefill graph on ``prompt`` with
    ``attention_mask`` (ones if omitted; 0 at left padding), then the decode graph once per further token, each fed
    the cache the previous graph returned and the mask grown by one. Returns the tokens (batch, steps) and each
    step's logits (batch, vocabulary)."""
    from exporter.ort_session import make_session

    prefill, decode = make_session(prefill_path, provider), make_session(decode_path, provider)
    names = output_names(prefill)  # logits, present.N.key/value: the decode step's outputs too
    mask = prompt_mask(prompt, attention_mask)
    batch = mask.shape[0]

    def step(token, index, outputs):
        grown = np.concatenate([mask, np.ones((batch, index + 1), np.int64)], axis=1)
        return decode.run(None, {"input_ids": token, "attention_mask": grown, **as_past(names, outputs)})

    first = prefill.run(None, {"input_ids": prompt.numpy(), "attention_mask": mask})
    return greedy(first, steps, step)


def greedy_seq2seq_through_onnx(paths: tuple[str, str, str], source: torch.Tensor, attention_mask: torch.Tensor,
                                start_token: int, steps: int,
                                provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime with the three graphs of
    ``export_seq2seq_for_generation``: the encoder once on ``source``, the first decoder step on ``start_token``,
    then the decoder step once per further token, fed the self-attention cache the previous step returned and the
    cross-attention cache the first step returned. Returns the tokens (batch, steps) and each step's logits
    (batch, vocabulary)."""
    from exporter.ort_session import make_session

    encoder, first_step, decoder_step = (make_session(path, provider) for path in paths)
    mask = attention_mask.numpy()
    (states,) = encoder.run(None, {"input_ids": source.numpy(), "attention_mask": mask})
    start = np.full((source.shape[0], 1), start_token, np.int64)
    first = first_step.run(None, {"decoder_input_ids": start, "encoder_attention_mask": mask,
                                  "encoder_hidden_states": states})
    # Both caches by name: the cross-attention one (present.N.encoder.*) from the first step, the self-attention one
    # (present.N.decoder.*) from the step before.
    first_cache, step_names = as_past(output_names(first_step), first), output_names(decoder_step)

    def step(token, index, outputs):
        latest = first_cache if index == 0 else as_past(step_names, outputs)  # index 0: the first step's outputs
        return decoder_step.run(None, {"decoder_input_ids": token, "encoder_attention_mask": mask,
                                       **first_cache, **latest})

    return greedy(first, steps, step)
