"""Errors a user can cause. Each carries a one-line message naming the culprit; the CLI maps
them to exit code 2 and never shows a traceback for them."""


class DDTriageError(Exception):
    """Root of every error ddtriage reports to the user."""


class RuleError(DDTriageError):
    """A rule, catalog or API file is malformed: the message names file, rule id and reason."""


class InputError(DDTriageError):
    """An input cannot be used at all (a usage problem, not a skipped file)."""
