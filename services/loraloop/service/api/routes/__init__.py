"""The API's routes, one module per resource: jobs, and the service's own health and metrics."""
