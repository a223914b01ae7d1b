"""The rollout API (`loraloop serve rollout-api`): submit, follow and cancel jobs; health and metrics; the
trajectory viewer at /ui.

Shaped like FastAPI's full-stack template: `main` builds the app, `deps` holds what routes depend on
(the settings, the job book, the Celery app, the bearer token), `routes/` one module per resource,
and the request and response models are `loraloop.service.models`.
"""
