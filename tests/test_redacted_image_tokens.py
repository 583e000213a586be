"""A redacted image counts as an image, not as the base64 its marker hid.

Shared traces redact an image's data URL to `[REDACTED_IMAGE_URL len=N sha=...]`, where N is
the length of the base64 text (megabytes for a screenshot). The counter charges an image block
`TOKENS_PER_IMAGE` whatever its bytes, so the marker's N must not be added as text: a redacted
Codex rollout with screenshots counted 5 to 57 times its recorded input before this."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from ctxlab._cost.tokens import TOKENS_PER_IMAGE, message_tokens


def _with_image(url: str, text: str = "[REDACTED_TEXT len=40 sha=1234abcd]") -> HumanMessage:
    return HumanMessage(
        content=[{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
    )


def test_a_redacted_image_url_counts_as_the_image_it_was() -> None:
    original = _with_image("data:image/png;base64," + "A" * 6_832_374, text="t" * 40)
    redacted = _with_image("[REDACTED_IMAGE_URL len=6832374 sha=3ef15eaa]")
    assert message_tokens(redacted) == message_tokens(original)
    assert message_tokens(redacted) < 20 + TOKENS_PER_IMAGE


def test_text_markers_beside_the_image_still_count_what_they_hide() -> None:
    short = _with_image("[REDACTED_IMAGE_URL len=10 sha=0]", text="[REDACTED_TEXT len=40 sha=1]")
    long = _with_image("[REDACTED_IMAGE_URL len=10 sha=0]", text="[REDACTED_TEXT len=4000 sha=1]")
    assert message_tokens(long) - message_tokens(short) == (4000 - 40) // 4
