"""The server command: the server's lifecycle on the host (stop, start, put back), its output, and the server under Nsight Systems."""
