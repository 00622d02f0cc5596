"""slugtext: URL slugs, word/number/sentence tokens and text shortening."""

from slugtext.case import split_identifier, title_case, to_camel, to_kebab, to_snake
from slugtext.normalize import collapse_whitespace, strip_accents, to_ascii
from slugtext.shorten import excerpt, truncate, wrap
from slugtext.slugify import slugify, unique_slug
from slugtext.tokenize import ngrams, sentences, tokenize, words

__all__ = ["collapse_whitespace", "excerpt", "ngrams", "sentences", "slugify", "split_identifier", "strip_accents",
           "title_case", "to_ascii", "to_camel", "to_kebab", "to_snake", "tokenize", "truncate", "unique_slug",
           "words", "wrap"]
__version__ = "0.4"
