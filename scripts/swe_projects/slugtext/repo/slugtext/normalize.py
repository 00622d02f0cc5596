"""Unicode clean-up shared by the slug and token functions."""

import unicodedata

# Letters that Unicode decomposition does not turn into an ASCII base letter.
TRANSLITERATIONS = {"ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
                    "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th"}


def strip_accents(text: str) -> str:
    """``text`` without combining marks: ``'Crème Brûlée'`` -> ``'Creme Brulee'``."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def to_ascii(text: str) -> str:
    """Best-effort ASCII: a few letters transliterated, accents stripped, anything else dropped."""
    text = "".join(TRANSLITERATIONS.get(char, char) for char in text)
    return strip_accents(text).encode("ascii", "ignore").decode("ascii")


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (newlines and tabs included) as one space, none at the ends."""
    return " ".join(text.split())
