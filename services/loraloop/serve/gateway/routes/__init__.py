"""The gateway's routers, one module per resource (service/api/routes/ is the model)."""
