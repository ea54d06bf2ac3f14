"""The probe command and what it reads of a running server: its command line, versions and the model it serves."""
