"""`python3 -m infbench_agent.nsys_report`: the Nsight Systems reader (profile/nsys_report.py) under the name the
extension's trace reader starts it by (src/core/trace/nsysSource.ts), beside the agent rather than as one of its
commands."""
from infbench_agent.profile.nsys_report import main

if __name__ == "__main__":
    raise SystemExit(main())
