"""Entry point: `python -m infbench_agent <command> [options]` or `python agent.pyz <command> [options]`."""
import sys

from infbench_agent import version

if sys.version_info < version.MIN_PYTHON:
    # The rest of the agent uses syntax an older Python cannot parse: refuse in words before importing it.
    raise SystemExit(version.refuse_old_python(sys.argv[1:]))

from infbench_agent.cli import main  # noqa: E402

raise SystemExit(main())
