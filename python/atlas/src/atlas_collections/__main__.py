"""``python -m atlas_collections import OUT FILE.nc ...``: NetCDF files -> a new collection."""

import sys

from .netcdf import main_import


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(
            "usage: python -m atlas_collections import OUT FILE.nc [FILE.nc ...] [--engine E]"
            " [--jobs N] [--skip-bad] [--no-progress] [--append [--replace]]"
        )
        return 0 if argv else 2
    if argv[0] != "import":
        print(f"error: unknown command {argv[0]!r} (the one command is 'import')", file=sys.stderr)
        return 2
    return main_import(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
