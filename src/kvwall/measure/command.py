"""`kvwall measure`: placeholder until the measured leg lands."""


def register(subparsers) -> None:
    """Add the `measure` subcommand to the kvwall command line."""
    parser = subparsers.add_parser("measure", help="measure the KV slope on this machine")
    parser.set_defaults(func=lambda args: print("kvwall measure: not built yet") or 2)
