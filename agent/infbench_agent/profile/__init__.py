"""The profile phase: the server's torch profiler driven over a fixed decode workload, and Nsight Systems' report read."""
