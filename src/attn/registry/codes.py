"""The finding and reason codes, and the warning each code issues: off a warm lookup's path."""

from __future__ import annotations

import enum

from .errors import AttnWarning, ConflictWarning, RejectedPluginWarning


class Code(str, enum.Enum):
    """What a finding, status reason or metadata problem is; equal to its JSON text."""

    __module__ = "attn.registry"

    # -- findings (attn doctor), one per kind of problem or note ------------------
    INVALID = "invalid"
    INCOMPATIBLE = "incompatible"
    SHADOWED = "shadowed"
    PREFERRED = "preferred"
    UNDECLARED_REQUIREMENT = "undeclared-requirement"
    TYPO_GROUP = "typo-group"
    EMPTY_METADATA = "empty-metadata"
    UNREADABLE_METADATA = "unreadable-metadata"
    DUPLICATE_METADATA = "duplicate-metadata"
    UNMATCHED_SELECTION = "unmatched-selection"
    CASE_COLLISION = "case-collision"
    NON_PLUGIN_COPY = "non-plugin-copy"
    LOAD_FAILURE = "load-failure"
    REGISTERED_BY_PLUGIN = "registered-by-plugin"
    # -- why a plugin row is not used (discovery) ---------------------------------
    NOT_SELECTED = "not-selected"
    BLOCKED = "blocked"
    INVALID_NAME = "invalid-name"
    INVALID_VALUE = "invalid-value"
    INVALID_REQUIREMENT = "invalid-requirement"
    REQUIREMENT_UNMET = "requirement-unmet"
    HOST_NOT_INSTALLED = "host-not-installed"
    # -- why selection rejects a candidate ---------------------------------------
    MISSING_REQUIREMENT = "missing-requirement"
    INVALID_CONFIGURATION = "invalid-configuration"
    VALIDATION_FAILED = "validation-failed"
    UNREGISTERED = "unregistered"
    # -- why a metadata file or sys.path entry cannot be read (the reader) -------
    PERMISSION_DENIED = "permission-denied"
    NOT_UTF8 = "not-utf8"
    IS_A_FOLDER = "is-a-folder"
    NO_METADATA = "no-metadata"
    NO_NAME = "no-name"
    READ_ERROR = "read-error"
    BYTE_ORDER_MARK = "byte-order-mark"
    ENTRIES_BEFORE_HEADER = "entries-before-header"
    FINDER_FAILED = "finder-failed"
    PATH_UNREADABLE = "path-unreadable"

    def __str__(self) -> str:
        """The code as written in JSON and messages."""
        return str(self.value)


#: Why a file or a sys.path entry cannot be read: the last section above.
READER_CODES = frozenset(tuple(Code)[tuple(Code).index(Code.PERMISSION_DENIED) :])
#: The findings that are notes: every other one makes ``attn doctor`` fail and strict mode raise.
NOTE_CODES = frozenset({Code.CASE_COLLISION, Code.PREFERRED, Code.NON_PLUGIN_COPY})
#: The findings about the environment as a whole, not about one registry's group.
_METADATA_CODES = (Code.EMPTY_METADATA, Code.UNREADABLE_METADATA, Code.DUPLICATE_METADATA)
ENVIRONMENT_CODES = frozenset((*_METADATA_CODES, Code.NON_PLUGIN_COPY, Code.UNMATCHED_SELECTION))

#: The warning a merge issues for each code (PluginWarning for the other codes).
WARNINGS: dict[str, type[AttnWarning]] = {Code.SHADOWED: ConflictWarning}
_REJECTED = (Code.INCOMPATIBLE, Code.INVALID, Code.UNREADABLE_METADATA, Code.TYPO_GROUP)
WARNINGS.update(dict.fromkeys(_REJECTED, RejectedPluginWarning))
