"""The package imports and its native module loads."""

import datasetrt


def test_import_and_classes_have_help():
    for name in datasetrt.__all__:
        obj = getattr(datasetrt, name)
        if callable(obj) and not isinstance(obj, type(Exception)):
            assert obj.__doc__, name
    assert issubclass(datasetrt.CacheError, datasetrt.Error)
    assert issubclass(datasetrt.ManifestUpdateError, datasetrt.Error)
    assert issubclass(datasetrt.WriteError, datasetrt.Error)
