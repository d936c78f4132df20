"""One module per subcommand: ``add_parser(subparsers)`` and ``run(args) -> int``."""
