"""Command line: python -m powerlab_andes {version,modes,play} ..."""

import argparse
import json
import platform
import sys

from . import __version__


def _andes_version():
    try:
        import andes
    except ImportError as err:
        raise SystemExit(
            f"ANDES is not importable ({err}); install the pinned environment "
            "with `bash scripts/grid/setup-andes.sh`"
        )
    return andes.__version__


def cmd_version(_args):
    print(
        json.dumps(
            {
                "powerlab_andes": __version__,
                "andes": _andes_version(),
                "python": platform.python_version(),
            }
        )
    )
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m powerlab_andes")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version", help="print one JSON line with the versions")
    args = parser.parse_args(argv)
    if args.cmd == "version":
        return cmd_version(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
