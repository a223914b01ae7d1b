"""The embedded default: jobs run in this process, no broker and no API.

`LocalJobs` has the interface of the API and broker clients (submit, status, list, cancel), so the
CLI follows a job the same way wherever it runs. Its episodes run in one thread pool for the process
(`LORALOOP_CONCURRENCY` or `--concurrency` in flight, so vLLM can batch), first submitted first played as
on a Celery worker, through the code such a worker runs (`loraloop.rollout.runner.play`), counted in a book
kept in memory. One pool, not one a job: a job submitted ahead (`train rl --async`) waits for the slots of
the jobs before it instead of slowing the one being waited for, and the process never has more than
`concurrency` episodes in flight.
"""

from __future__ import annotations

import builtins
import os
from concurrent.futures import Future, ThreadPoolExecutor

from loraloop.hardware import cpu_list
from loraloop.rollout.runner import crash_summary, play
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.rollout.summary import EpisodeSummary
from loraloop.service.book import MemoryBook
from loraloop.service.jobs import book_job, plan_job
from loraloop.service.models import JobRequest, JobStatus
from loraloop.settings import Settings


class LocalJobs:
    """Jobs whose episodes run in this process's threads; they live as long as the process."""

    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings
        self.concurrency = concurrency or settings.concurrency
        self.cpus = cpu_list(settings.rollout_cpus)  # a bad list fails here, before any episode
        self.book = MemoryBook()
        self._runs: dict[str, list[Future]] = {}
        self._pool: ThreadPoolExecutor | None = None  # started with the first job

    def pool(self) -> ThreadPoolExecutor:
        """The process's episode threads, `concurrency` of them, each pinned to LORALOOP_ROLLOUT_CPUS."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.concurrency,
                thread_name_prefix="episode",
                initializer=pin_thread,
                initargs=(self.cpus,),
            )
        return self._pool

    def submit(self, request: JobRequest) -> JobStatus:
        """Plan the job, check its servers and start its episodes not yet stored; return its status."""
        return self.start(plan_job(request, self.settings), request)

    def start(self, specs: list[EpisodeSpec], request: JobRequest | None = None) -> JobStatus:
        """Book planned episodes and queue those not yet stored behind the episodes already queued (`concurrency`
        play at a time); return at once."""
        run_id, todo = book_job(specs, self.settings, self.book, request)
        self._runs[run_id] = [self.pool().submit(self._play, spec) for spec in todo]
        return self.book.status(run_id)

    def _play(self, spec: EpisodeSpec) -> EpisodeSummary:
        try:
            return play(spec, self.settings, self.book)
        except Exception as exc:  # already counted as a crash by play; the other episodes go on
            return crash_summary(exc, spec)

    def status(self, run_id: str) -> JobStatus:
        """The job's progress."""
        return self.book.status(run_id)

    def list(self, limit: int = 50) -> list[JobStatus]:
        """This process's jobs, newest first."""
        return self.book.list(limit)

    def cancel(self, run_id: str) -> JobStatus:
        """Cancel a job: episodes not started end as `cancelled` unplayed, running ones stop at their next step."""
        self.book.cancel(run_id)
        return self.book.status(run_id)

    def summaries(self, run_id: str) -> builtins.list[EpisodeSummary]:  # `list` in this class is LocalJobs.list
        """Wait for the job's episodes and return their summaries, in planned order."""
        return [future.result() for future in self._runs[run_id]]


def pin_thread(cpus: set[int]) -> None:
    """Run the calling thread (an episode's: its agent, env driver and model calls) on `cpus` (LORALOOP_ROLLOUT_CPUS);
    nothing when empty. On Linux an affinity set with pid 0 is the calling thread's alone."""
    if cpus:
        os.sched_setaffinity(0, cpus)
