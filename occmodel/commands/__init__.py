"""One module per ``occmodel`` subcommand: ``add_parser(subparsers, common)`` and
``run(args) -> Report`` (plain data; rendering lives in report.py)."""
