"""The tau2 kind: tau2-bench's customer-service episodes through its gym interface, an LLM playing the user."""
