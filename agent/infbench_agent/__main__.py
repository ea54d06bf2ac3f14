"""Entry point: `python -m infbench_agent <command> [options]` or `python agent.pyz <command> [options]`."""
from infbench_agent.cli import main

raise SystemExit(main())
