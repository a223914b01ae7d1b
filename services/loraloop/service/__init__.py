"""The rollout service: the job book in Redis, the Celery app and its workers, the jobs API and its clients."""
