"""Exceptions raised by daterange."""


class DateRangeError(ValueError):
    """Base class of every daterange error."""


class InvalidRange(DateRangeError):
    """A range whose end is before its start."""


class ParseError(DateRangeError):
    """Text that is not a date or a range."""
