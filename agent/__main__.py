# Entry of the zipapp (dist/agent.pyz) that is copied to the host: `python agent.pyz <command> ...`.
import infbench_agent.__main__  # noqa: F401  (runs the agent, refusing a Python older than it supports)
