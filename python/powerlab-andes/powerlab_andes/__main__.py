"""Command line: python -m powerlab_andes {version,modes,play} ...

    version                      one JSON line: powerlab_andes, andes, python
    modes --case C --bus B --p-mw P --out modes.json [--tie L1,L2]
    play  --case C --bus B --windows windows.json --out-dir DIR [--tie L1,L2]
"""

import argparse
import json
import platform
import sys

from . import __version__

INSTALL = "install the pinned environment with `bash scripts/grid/setup-andes.sh`"


def _andes_version():
    try:
        import andes
    except ImportError as err:
        raise SystemExit(f"ANDES is not importable ({err}); {INSTALL}")
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


def cmd_modes(args):
    from . import linear, system

    version = _andes_version()
    try:
        built = system.build(args.case, system.parse_bus(args.bus), args.p_mw, tie=args.tie)
        out = linear.modes_json(built, version)
    except (system.CaseError, linear.LinearError) as err:
        print(f"powerlab_andes modes: {err}", file=sys.stderr)
        return 1
    with open(args.out, "w") as fh:
        fh.write(linear.dumps(out))
    return 0


def cmd_play(args):
    from . import play, system

    version = _andes_version()
    try:
        out = play.play(
            args.case,
            system.parse_bus(args.bus),
            args.windows,
            args.out_dir,
            tie=args.tie,
            andes_version=version,
        )
    except (play.WindowError, system.CaseError) as err:
        print(f"powerlab_andes play: {err}", file=sys.stderr)
        return 1
    bad = [w for w in out["windows"] if not w["converged"]]
    for w in bad:
        print(f"powerlab_andes play: window {w['name']}: {w['error']}", file=sys.stderr)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m powerlab_andes")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version", help="print one JSON line with the versions")
    for name, helptext in (
        ("modes", "linearise the case with the facility at BUS; write modes.json"),
        ("play", "play window CSVs of the facility's power into the case"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--case", required=True, help="a case under andes/cases/ or a file path")
        p.add_argument("--bus", required=True, help="the facility's bus idx")
        p.add_argument("--tie", default=None, help="tie line idx, comma separated (overrides the case table)")
        if name == "modes":
            p.add_argument("--p-mw", type=float, required=True, help="the facility's power, MW")
            p.add_argument("--out", required=True, help="where to write modes.json")
        else:
            p.add_argument("--windows", required=True, help="windows.json")
            p.add_argument("--out-dir", required=True, help="folder for NNN.csv and play.json")
    args = parser.parse_args(argv)
    return {"version": cmd_version, "modes": cmd_modes, "play": cmd_play}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
