"""One exception hierarchy for trainledger.

Every error the package raises on purpose is a ``TrainledgerError``. Where a built-in type is
what a caller would naturally catch (a bad argument is a ``ValueError`` or ``TypeError``), the
class derives from both, so ``except ValueError`` keeps working. Messages say what was expected
and what was received; lower-level errors are chained with ``raise ... from``.

    TrainledgerError
    ├── CallbackError                    a callback raised; names the callback and the hook
    ├── DatasetError (TypeError)         a dataset or batch the host cannot use
    ├── SummaryError
    │   ├── SummaryWriteError            the background writer failed (raised on flush/close)
    │   └── DiskSpaceError               the disk would fill before the next write
    ├── CheckpointError
    │   ├── CheckpointFormatError        not a trainledger/safetensors checkpoint, or corrupt
    │   ├── CheckpointDecryptError       wrong key, tampered or truncated encrypted file
    │   ├── CheckpointLoadError          strict load mismatch (names and shapes listed)
    │   └── CheckpointWriteError (OSError)  a (background) save failed; raised at the next save/end
    ├── StreamError                      a streaming source was misused (closed, bad offset)
    ├── RunNotFoundError (LookupError)   the web UI: no such run under BASE (always a 404)
    ├── MissingExtraError (ModuleNotFoundError)  an optional dependency is missing; names the extra
    ├── UnsupportedLocationError (ValueError)  a URL scheme trainledger does not store to
    ├── ReadOnlyBaseError (PermissionError)  nowhere writable for a change to a base (409)
    ├── PathNotFoundError (FileNotFoundError)  a run or file given to a reader does not exist
    ├── ObjectStoreError (OSError)       object storage (S3) refused or failed an operation
    │   └── ObjectNotFoundError (PathNotFoundError)  an s3:// URL names no object
    └── LineageError                     MindInsight's lineage errors, same class names/texts
        ├── LineageParamTypeError (TypeError)
        ├── LineageParamValueError (ValueError)
        │   └── ModelNotFoundError (LookupError)  no such named model, version or alias
        ├── LineageParamSummaryPathError
        ├── LineageSearchConditionParamError
        ├── LineageFileNotFoundError
        ├── LineageQuerySummaryDataError
        │   ├── IndexUnreachableError    the shared (PostgreSQL) index stayed unreachable
        │   └── IndexRebuildingError     the index was deleted or replaced; being rebuilt
        └── LineageWriteError            the lineage writer could not write its file

    UnknownFieldWarning (UserWarning)    a query names a field no run has (not an error)
"""

from __future__ import annotations


class TrainledgerError(Exception):
    """Base of every error raised on purpose by trainledger."""


class CallbackError(TrainledgerError):
    """A callback raised inside a hook; the message names the callback class and the hook."""

    def __init__(self, callback: str, hook: str, cause: BaseException) -> None:
        self.callback = callback
        self.hook = hook
        super().__init__(f"callback {callback}.{hook} raised {type(cause).__name__}: {cause}")


class DatasetError(TrainledgerError, TypeError):
    """A dataset or batch that the training host cannot use."""


class SummaryError(TrainledgerError):
    """Base of summary-writing errors."""


class SummaryWriteError(SummaryError):
    """The background summary writer failed; raised once on the next flush() or close()."""


class DiskSpaceError(SummaryError, OSError):
    """Writing would leave less free space than the guard allows."""


class CheckpointError(TrainledgerError):
    """Base of checkpoint errors."""


class CheckpointFormatError(CheckpointError, ValueError):
    """The file is not a readable checkpoint (bad header, crc mismatch, truncated)."""


class CheckpointDecryptError(CheckpointError, ValueError):
    """Decryption failed: wrong key, tampering, reordering or truncation."""


class CheckpointLoadError(CheckpointError, ValueError):
    """Parameters do not match the network under strict loading."""


class CheckpointWriteError(CheckpointError, OSError):
    """A checkpoint save failed (in the background: raised at the next save or at train end)."""


class StreamError(TrainledgerError):
    """A streaming data source was misused."""


class LineageError(TrainledgerError):
    """Base of lineage errors; subclasses keep MindInsight's class names and messages."""


class LineageParamTypeError(LineageError, TypeError):
    """A lineage parameter has the wrong type."""


class LineageParamValueError(LineageError, ValueError):
    """A lineage parameter has a wrong value."""


class ModelNotFoundError(LineageParamValueError, LookupError):
    """A named model, a version of one or an alias the base's registry does not hold
    (``trainledger.query.resolve_model``): the message lists what it holds. A
    ``LookupError`` too, so a caller (the web UI: 404) tells it from a malformed name."""


class LineageParamSummaryPathError(LineageError, ValueError):
    """The summary path is invalid (missing, not a directory, unsafe)."""


class LineageSearchConditionParamError(LineageError, ValueError):
    """A search condition is malformed. ``field``: the field name it could not take, where
    one is to blame (the message keeps MindInsight's text; a note adds the nearest names)."""

    field: str | None = None


class LineageFileNotFoundError(LineageError, FileNotFoundError):
    """No lineage file where one is required."""


class LineageQuerySummaryDataError(LineageError):
    """Lineage data could not be queried."""


class IndexUnreachableError(LineageQuerySummaryDataError):
    """The shared lineage index (PostgreSQL) did not answer within its retry window: a
    service outage, not a bad query (the web UI answers 503)."""


class IndexRebuildingError(LineageQuerySummaryDataError):
    """The lineage index was deleted or replaced and is being rebuilt from the run files: a
    long-lived reader says so (the web UI answers 503 with Retry-After) instead of answering
    from a half-built index as if the base held fewer runs."""


class LineageWriteError(LineageError, OSError):
    """The lineage writer could not create or append its file."""


class MissingExtraError(TrainledgerError, ModuleNotFoundError):
    """A public name needs an optional dependency that is not installed; the message names the
    extra to install (``pip install 'trainledger[torch]'``). A ``ModuleNotFoundError``, so
    ``except ImportError`` keeps working."""


class RunNotFoundError(TrainledgerError, LookupError):
    """A run id names no run under the UI's base (or tries to leave it): answered with 404."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} under the base directory")


class UnsupportedLocationError(TrainledgerError, ValueError):
    """A ``scheme://`` location trainledger does not store to (never taken as a local path)."""


class ReadOnlyBaseError(TrainledgerError, PermissionError):
    """A change (a tag, a remark, an audit entry, an archive) has nowhere writable to go: the
    message names the read-only paths; the web UI answers 409."""


class ObjectStoreError(TrainledgerError, OSError):
    """Object storage refused or failed an operation; the message names the location."""


class PathNotFoundError(TrainledgerError, FileNotFoundError):
    """A run directory or file given to a reader does not exist: the message names it, so a
    mistyped path is an error rather than an empty answer (``read_scalars`` on it is not
    ``{}``)."""


class ObjectNotFoundError(ObjectStoreError, PathNotFoundError):
    """An ``s3://`` URL names no object (or no object under it): both an ``ObjectStoreError``
    and a ``FileNotFoundError``, as a missing local path would be."""


class UnknownFieldWarning(UserWarning):
    """A query names a field no run has (``metric/Accuracy`` where the runs record
    ``metric/accuracy``): valid, and it matches or orders nothing, so it is said, with the
    nearest field the runs have. A warning, not an error: a field may appear with the next run."""
