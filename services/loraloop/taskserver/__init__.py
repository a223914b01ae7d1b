"""The Task Server API (AReaL's TaskServerWorkflow): the app, its episode sessions and their shared state."""
