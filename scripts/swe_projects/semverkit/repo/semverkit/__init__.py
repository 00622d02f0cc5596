"""semverkit: parse, compare and bump semantic versions, and match them against npm-style ranges."""

from semverkit.bump import bump
from semverkit.errors import InvalidRange, InvalidVersion
from semverkit.ranges import Range, max_satisfying, min_satisfying, satisfies
from semverkit.version import Version

__all__ = ["InvalidRange", "InvalidVersion", "Range", "Version", "bump", "max_satisfying", "min_satisfying",
           "satisfies"]
__version__ = "2.1"
