"""Every Rust error variant becomes its Python class with its `kind`, taken from the variant.

The native module (built with its test hooks) converts one Rust error of every variant of every
error type it raises, for a collection at ``s3://bucket/runs``; a variant added in Rust appears
here and fails this test until its class and kind are listed.
"""

import pickle

import pytest

import atlas_collections as ac
from atlas_collections import _atlas, errors

COLLECTION = "s3://bucket/runs"

EXPECTED = {
    "AtlasError::NotAnAtlasCollection": ("NotACollectionError", "not_an_atlas_collection"),
    "AtlasError::UnsupportedVersion": ("UnsupportedVersionError", "unsupported_version"),
    "AtlasError::CorruptCollection": ("CorruptCollectionError", "corrupt_collection"),
    "AtlasError::DatasetNotFound": ("DatasetNotFoundError", "dataset_not_found"),
    "AtlasError::NoSuchArray": ("AtlasError", "no_such_array"),
    "AtlasError::ArrayNotFound": ("ArrayNotFoundError", "array_not_found"),
    "AtlasError::TypeMismatch": ("AtlasError", "type_mismatch"),
    "AtlasError::UnsupportedDType": ("UnsupportedDTypeError", "unsupported_dtype"),
    "AtlasError::InvalidSelection": ("SelectionError", "invalid_selection"),
    "AtlasError::InvalidQuery": ("QueryError", "invalid_query"),
    "AtlasError::Mask": ("CorruptCollectionError", "mask"),
    "AtlasError::DeleteConflict": ("StorageError", "delete_conflict"),
    "AtlasError::Growing": ("AtlasError", "growing"),
    "AtlasError::Segment(Storage)": ("StorageError", "segment"),
    "AtlasError::Segment(Io)": ("StorageError", "segment"),
    "AtlasError::Store(Generic)": ("StorageError", "store"),
    "AtlasError::Store(NotFound)": ("StorageError", "store"),
    "AtlasError::Io(TimedOut)": ("StorageError", "io"),
    "AtlasError::Io(PermissionDenied)": ("StorageError", "io"),
    # A naming error's kind is what the name names, as it always was.
    "WriteError::InvalidName": ("InvalidNameError", "array name"),
    "WriteError::DuplicateDataset": ("DuplicateNameError", "dataset name"),
    "WriteError::DuplicateArray": ("DuplicateNameError", "array name"),
    "WriteError::DuplicateAttribute": ("DuplicateNameError", "attribute key"),
    "WriteError::InvalidLayout": ("LayoutError", "invalid_layout"),
    "WriteError::Segment(Storage)": ("WriteError", "segment"),
    "WriteError::Segment(Codec)": ("WriteError", "segment"),
    "WriteError::Footer": ("WriteError", "footer"),
    "WriteError::Store(Generic)": ("StorageError", "store"),
    "WriteError::Store(PermissionDenied)": ("StorageError", "store"),
    "WriteError::Poisoned": ("WriteError", "poisoned"),
    "NameError(Dataset)": ("InvalidNameError", "dataset name"),
    "NameError(Array)": ("InvalidNameError", "array name"),
    "NameError(AttributeKey)": ("InvalidNameError", "attribute key"),
    "Failure::Atlas": ("DatasetNotFoundError", "dataset_not_found"),
    "Failure::Write": ("WriteError", "poisoned"),
    "Failure::Name": ("InvalidNameError", "dataset name"),
    "Failure::Exists": ("CollectionExistsError", "collection_exists"),
    # An append's taken name is a duplicate name, its kind what the name names.
    "Failure::Append": ("DuplicateNameError", "dataset name"),
    "Failure::Location": ("StorageError", "location"),
    "Failure::Panicked": ("AtlasPanicError", "panic"),
}

# Retryable: the transport (a store's `Generic` failure, which array-format reports to a segment
# as a storage error), a timed-out local call, and a delete that kept losing races; nothing
# that the bytes or the request decide.
RETRYABLE = {
    "AtlasError::DeleteConflict",
    "AtlasError::Segment(Storage)",
    "AtlasError::Store(Generic)",
    "AtlasError::Io(TimedOut)",
    "WriteError::Segment(Storage)",
    "WriteError::Store(Generic)",
}

EXAMPLES = _atlas._testing.error_examples()
BY_NAME = dict(EXAMPLES)


def test_every_variant_is_listed_once():
    names = [name for name, _ in EXAMPLES]
    assert len(names) == len(set(names))
    assert set(names) == set(EXPECTED)


@pytest.mark.parametrize("name,exception", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_each_variant_has_its_class_kind_reason_and_retryable_flag(name, exception):
    class_name, kind = EXPECTED[name]
    assert type(exception) is getattr(errors, class_name), name
    assert isinstance(exception, ac.AtlasError)
    assert exception.kind == kind
    assert exception.reason, name
    assert exception.path is not None, name
    if not isinstance(exception, errors.InvalidNameError):  # its message is the name's
        assert str(exception).startswith(f"{exception.path}: "), name
    assert exception.retryable is (name in RETRYABLE), name


def test_a_transport_failure_of_the_store_is_retryable():
    store = BY_NAME["AtlasError::Store(Generic)"]
    assert isinstance(store, ac.StorageError) and store.retryable is True
    assert BY_NAME["AtlasError::Store(NotFound)"].retryable is False


def test_a_reason_is_the_message_without_its_location():
    container = BY_NAME["AtlasError::CorruptCollection"]
    assert container.path == f"{COLLECTION}/data.atlas"
    assert container.field == "trailer.footer_size"
    assert container.reason == "0 is smaller than a footer"
    mask = BY_NAME["AtlasError::Mask"]
    assert (mask.path, mask.field) == (f"{COLLECTION}/deleted.mask", "deleted.mask")
    io = BY_NAME["AtlasError::Io(TimedOut)"]
    assert io.path == "/data/runs" and str(io) == f"{io.path}: {io.reason}"
    version = BY_NAME["AtlasError::UnsupportedVersion"]
    assert (version.found, version.expected) == (9, 8)
    assert version.reason == "format version 9, this reader knows 8"


def test_lookups_name_what_was_looked_up():
    dataset = BY_NAME["AtlasError::DatasetNotFound"]
    assert isinstance(dataset, errors.DatasetNotFoundError) and isinstance(dataset, KeyError)
    assert dataset.name == "jan"
    assert str(dataset) == f"{COLLECTION}: no dataset named 'jan'"
    array = BY_NAME["AtlasError::ArrayNotFound"]
    assert (array.dataset, array.name) == ("jan", "t2m")
    assert isinstance(BY_NAME["AtlasError::InvalidSelection"], IndexError)
    layout = BY_NAME["WriteError::InvalidLayout"]
    assert (layout.dataset, layout.name) == ("jan", "t2m")
    duplicate = BY_NAME["WriteError::DuplicateAttribute"]
    assert duplicate.name == "units" and duplicate.reason == "set twice on dataset 'jan'"
    invalid = BY_NAME["NameError(Array)"]
    assert invalid.name == "_datasets" and invalid.reason == "a leading '_' is reserved"


def test_python_raises_the_same_classes_with_the_same_fields():
    error = errors.DatasetNotFoundError("x: no dataset named 'a'", path="x", name="a")
    assert str(error) == "x: no dataset named 'a'"  # not KeyError's repr
    assert (error.path, error.reason, error.name) == ("x", "x: no dataset named 'a'", "a")
    assert error.kind == "dataset_not_found" and error.retryable is False
    assert error.message == "x: no dataset named 'a'" and error.args == (error.message,)
    assert errors.AtlasError("plain").path is None
    assert errors.StorageError.retryable is False
    with pytest.raises(KeyError):
        raise error
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is errors.DatasetNotFoundError
    assert (str(again), again.path, again.name) == (str(error), "x", "a")


def test_the_classes_are_the_native_modules_and_say_they_are_in_errors():
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls is getattr(_atlas, name) is getattr(ac, name)
        assert cls.__module__ == "atlas_collections.errors"
        assert cls.__doc__
        assert issubclass(cls, errors.AtlasError)
    bases = {
        "DatasetNotFoundError": KeyError,
        "ArrayNotFoundError": KeyError,
        "SelectionError": IndexError,
        "InvalidNameError": ValueError,
        "DuplicateNameError": ValueError,
        "LayoutError": ValueError,
        "UnsupportedDTypeError": TypeError,
        "ImportRefusedError": ValueError,
    }
    for name, builtin in bases.items():
        assert getattr(errors, name).__bases__ == (errors.AtlasError, builtin)
