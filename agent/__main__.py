# Entry of the zipapp (dist/agent.pyz) that is copied to the host: `python agent.pyz <command> ...`.
from infbench_agent.cli import main

raise SystemExit(main())
