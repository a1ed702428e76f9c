"""One module per ``occmodel`` subcommand: ``add_parser(subparsers, common)`` and
``run(args) -> Report`` (plain data; rendering lives in report.py).

``SUMMARY`` holds each command's one-line help: ``occmodel --help`` lists them without
importing any command module (each imports what its own command needs: sympy, triton,
numpy...); ``occmodel NAME ...`` imports only ``occmodel.commands.NAME``."""

SUMMARY = {
    'predict': 'predict shared memory, registers and occupancy: baseline vs candidate',
    'table': 'feasibility table over a sweep of configs (markdown for design reviews)',
    'compile': "compile for the spec's arch (no GPU): actual vs predicted",
    'accuracy': "the model's error against real compiles over a card's config space",
    'fit': 'fit shared-memory / register expressions for your own kernel from compiles',
    'validate': 'on a GPU: time baseline vs candidates, verdict on each premise',
    'occupancy': 'the occupancy calculator by hand',
    'specs': "list hardware specs, show one, or detect the local GPU's",
    'plot': "pictures: the occupancy calculator's curves, a feasibility heat map",
    'rank': 'rank configs by a static throughput model (no GPU)',
    'calibrate': 'on a GPU: measure bandwidth, latency, launch cost for `occmodel rank`',
    'cache': "show or free occmodel's compile cache and Triton's cache it owns",
}
