"""Shell tasks: AgentBench's OS-interaction format, and its published data read in place or imported."""
