"""What a position scheme or an attention kernel declares it supports, as data.

Every rule that pairs a scheme with a kernel, a window, packed documents, attention dropout
or a device reads these declarations (:mod:`roformer_lit.architecture_rules`), never a
component's name, so a plugin's scheme or kernel is checked by the same rules as a built-in
the moment it declares itself. ``python -m roformer_lit schemes`` prints them.

A scheme declares class attributes (:class:`~roformer_lit.positions.base.PositionScheme`):
``needs_score_bias``, ``translation_invariant``, ``reads_positions``,
``uses_segment_positions``, ``head_size_multiple``; whether it adds to the embeddings is
read from whether it overrides ``embed``, and whether its positions are bounded from
whether it overrides ``max_length``. A kernel declares ``supports_score_bias``,
``supports_segments``, ``supports_window``, ``supports_dropout`` and ``training_devices``
(:class:`~roformer_lit.attention.base.AttentionKernel`), and may refine them for its
options in :meth:`~roformer_lit.attention.base.AttentionKernel.capabilities` (softmax's
``backend: flex`` has no attention dropout).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelCapabilities:
    """What a kernel, with its options, can do."""

    score_bias: bool
    segments: bool
    window: bool
    dropout: bool
    #: Device types it can train on (``("cpu", "cuda")``); None: every device.
    training_devices: tuple[str, ...] | None = None
    #: Options that act only in a windowed layer (softmax's ``window_block``): given to
    #: layers none of which has a window, they change nothing but the run's name.
    window_options: tuple[str, ...] = ()
    #: Options that act only in a layer whose scheme adds a score bias (softmax's
    #: ``bias_block``, ``bias_block_from``): with none, they change nothing but the name.
    bias_options: tuple[str, ...] = ()

    def described(self) -> str:
        """``score bias, segments, window, dropout`` (what it supports, in words)."""
        names = [
            name
            for name, supported in (
                ("score bias", self.score_bias),
                ("packed documents", self.segments),
                ("window", self.window),
                ("attention dropout", self.dropout),
            )
            if supported
        ]
        devices = (
            ""
            if self.training_devices is None
            else f"; trains on {'/'.join(self.training_devices)}"
        )
        return (", ".join(names) or "none") + devices


@dataclass(frozen=True)
class SchemeCapabilities:
    """What a scheme needs and claims."""

    needs_score_bias: bool
    embeds: bool
    reads_positions: bool
    translation_invariant: bool
    bounded: bool
    head_size_multiple: int

    def described(self) -> str:
        """What the scheme needs and claims, in words."""
        parts = [
            "needs a score bias" if self.needs_score_bias else "no score bias",
            "adds to the embeddings (cannot vary per layer)" if self.embeds else "per layer",
            "relative (translation-invariant)" if self.translation_invariant else "absolute",
        ]
        if not self.reads_positions:
            parts.append("reads no positions")
        if self.bounded:
            parts.append("bounded by model.max_positions")
        if self.head_size_multiple > 1:
            parts.append(f"head size a multiple of {self.head_size_multiple}")
        return ", ".join(parts)
