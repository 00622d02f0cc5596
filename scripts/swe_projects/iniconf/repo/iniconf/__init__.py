"""iniconf: read INI configuration files, with typed getters and ``${...}`` interpolation."""

from iniconf.config import Config
from iniconf.errors import ConfigError, InterpolationError, MissingOptionError, MissingSectionError, ParseError
from iniconf.parser import load, parse

__all__ = ["Config", "ConfigError", "InterpolationError", "MissingOptionError", "MissingSectionError",
           "ParseError", "load", "parse"]
__version__ = "1.3"
