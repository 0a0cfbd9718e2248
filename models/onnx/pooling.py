"""Pooling and normalisation in numpy, exactly as sentence-transformers' Pooling and Normalize modules do.

Every function takes token embeddings ``(batch, seq, dim)`` float32 and the attention mask ``(batch, seq)``.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..sources.folder import DenseLayer, PoolingConfig

COUNT_EPS = 1e-9  # the floor of a mean's token count (an all-padding row gives 0), as sentence-transformers
PADDING_FOR_MAX = -1e9  # what padding becomes before the max, as sentence-transformers


def pool_mean(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sum_t m_t x_t / max(sum_t m_t, 1e-9)  (an all-padding row gives 0)."""
    m = mask[..., None].astype(tokens.dtype)
    return (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), COUNT_EPS)


def pool_mean_sqrt_len(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sum_t m_t x_t / sqrt(max(sum_t m_t, 1e-9))."""
    m = mask[..., None].astype(tokens.dtype)
    return (tokens * m).sum(axis=1) / np.sqrt(np.maximum(m.sum(axis=1), COUNT_EPS))


def pool_weighted_mean(tokens: np.ndarray, mask: np.ndarray, attention: np.ndarray | None = None) -> np.ndarray:
    """Position-weighted mean, as sentence-transformers 6: token t weighs t + 1 - f, f being the row's first
    non-padding token in the attention mask (``attention``; ``mask`` when not given), so that left padding does not
    shift the weights and a prompt left out of ``mask`` leaves the other tokens' weights as they were; masked tokens
    weigh 0. (sentence-transformers before 6 weighed t + 1 whatever the padding; right padding gives the same.)"""
    first = np.argmax((mask if attention is None else attention) > 0, axis=1)
    positions = np.arange(1, tokens.shape[1] + 1, dtype=tokens.dtype)[None, :] - first[:, None].astype(tokens.dtype)
    w = (positions * mask)[..., None].astype(tokens.dtype)
    return (tokens * w).sum(axis=1) / np.maximum(w.sum(axis=1), COUNT_EPS)


def pool_cls(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The first non-padding token's vector: index 0 with right padding (sentence-transformers 5.7 takes the
    first unmasked token, so left padding and ``include_prompt=False`` are handled the same way)."""
    first = np.argmax(mask > 0, axis=1)
    return tokens[np.arange(tokens.shape[0]), first]


def pool_max(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Max over tokens, padding set to -1e9 first (as sentence-transformers does)."""
    return np.where(mask[..., None] > 0, tokens, np.asarray(PADDING_FOR_MAX, tokens.dtype)).max(axis=1)


def pool_last_token(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The vector of the last non-padding token; right and left padding both handled (an all-padding row
    gives 0, as in sentence-transformers)."""
    seq = mask.shape[1]
    last = seq - 1 - np.argmax(mask[:, ::-1] > 0, axis=1)
    rows = np.arange(tokens.shape[0])
    return tokens[rows, last] * (mask[rows, last] > 0)[:, None].astype(tokens.dtype)


POOLERS = {
    "mean": pool_mean,
    "mean_sqrt_len_tokens": pool_mean_sqrt_len,
    "weightedmean": pool_weighted_mean,
    "cls": pool_cls,
    "max": pool_max,
    "lasttoken": pool_last_token,
}


def pool(tokens: np.ndarray, mask: np.ndarray, config: PoolingConfig, attention: np.ndarray | None = None
         ) -> np.ndarray:
    """Concatenate the configured poolings in sentence-transformers' order. ``mask`` is the pooling mask (the
    attention mask with a left-out prompt cleared), ``attention`` the attention mask (weightedmean's positions)."""
    parts = [pool_weighted_mean(tokens, mask, attention) if mode == "weightedmean" else POOLERS[mode](tokens, mask)
             for mode in config.modes]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


# The Dense activations supported: in numpy, and as the ONNX op of the graph head (models/onnx/head.py; None: none).
ACTIVATIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str | None]] = {
    "Identity": (lambda x: x, None),
    "Tanh": (np.tanh, "Tanh"),
    "ReLU": (lambda x: np.maximum(x, 0), "Relu"),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "Sigmoid"),
}


def activation_of(layer: DenseLayer) -> str:
    """The layer's activation by its short name (torch.nn.modules.activation.Tanh -> Tanh); one line when it is not
    supported."""
    name = layer.activation.rsplit(".", 1)[-1]
    if name not in ACTIVATIONS:
        from ...core.errors import ModelError
        raise ModelError(f"Dense activation {layer.activation} is not supported.",
                         f"use one of {', '.join(ACTIVATIONS)}.")
    return name


def dense(x: np.ndarray, layer: DenseLayer, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """activation(x W^T + b) for a sentence-transformers Dense module."""
    y = x @ weight.T
    if bias is not None:
        y = y + bias
    return ACTIVATIONS[activation_of(layer)][0](y).astype(np.float32, copy=False)
