"""The recording gateway (`loraloop serve gateway`): bring your own agent.

An agent that speaks the OpenAI API (its own code, LangGraph, smolagents, the OpenAI Agents SDK)
points its `base_url` here. The gateway proxies its calls to vLLM and records each one token-exact
in a session (sessions.py, recording.py); a session ends as one episode in the trajectory store,
which the exports and the RL loop read like any other. AReaL's online proxy API (app.py).
"""
