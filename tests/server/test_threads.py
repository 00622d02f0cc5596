"""The worker threads that run env code for the server."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time

import pytest

from agentgym.server.threads import DEFAULT_THREADS, EnvThreads


def test_results_exceptions_and_never_the_loop_thread() -> None:
    pool = EnvThreads(2)

    async def main() -> None:
        loop_thread = threading.get_ident()
        assert await pool.run(lambda: 6 * 7) == 42
        assert await pool.run(threading.get_ident) != loop_thread
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)
        assert await pool.run(lambda: "still works") == "still works"

    asyncio.run(main())
    pool.shutdown()


def test_blocking_jobs_run_in_parallel_and_leave_the_loop_free() -> None:
    pool = EnvThreads(4)
    barrier = threading.Barrier(4, timeout=5)  # only passes if 4 jobs run at once

    async def main() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(*(pool.run(lambda: (barrier.wait(), time.sleep(0.3))[0]) for _ in range(4)))
        task.cancel()
        assert sorted(results) == [0, 1, 2, 3]
        return ticks

    assert asyncio.run(main()) >= 10  # the loop kept running while every thread slept
    pool.shutdown()


def test_no_more_threads_than_the_size_and_every_job_runs() -> None:
    pool = EnvThreads(3)
    seen: set[str] = set()

    def job(i: int) -> int:
        seen.add(threading.current_thread().name)
        time.sleep(0.002)
        return i

    async def main() -> list[int]:
        return await asyncio.gather(*(pool.run(lambda i=i: job(i)) for i in range(200)))

    assert asyncio.run(main()) == list(range(200))
    assert 1 <= len(seen) <= 3
    pool.shutdown()


def test_shutdown_then_reuse_from_another_loop() -> None:
    pool = EnvThreads(2)
    assert asyncio.run(pool.run(lambda: 1)) == 1
    pool.shutdown()
    assert asyncio.run(pool.run(lambda: 2)) == 2  # a new loop, new threads
    pool.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("agentgym-env") and t.is_alive()]


def test_a_cancelled_caller_does_not_break_the_pool() -> None:
    pool = EnvThreads(1)
    release = threading.Event()

    async def main() -> str:
        waiting = asyncio.create_task(pool.run(lambda: release.wait(5)))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return await pool.run(lambda: "next job")

    assert asyncio.run(main()) == "next job"
    pool.shutdown()


def test_bad_size_and_default() -> None:
    with pytest.raises(ValueError, match="size must be >= 1"):
        EnvThreads(0)
    assert 1 <= DEFAULT_THREADS <= 32


def test_a_job_in_flight_at_shutdown_still_answers() -> None:
    pool = EnvThreads(1)
    release = threading.Event()

    async def main() -> str:
        waiting = asyncio.create_task(pool.run(lambda: (release.wait(5), "done")[1]))
        await asyncio.sleep(0.05)
        pool.shutdown(wait=False)  # on the loop's thread, as the server's lifespan does: the loop stops watching
        release.set()
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == "done"


def test_loops_in_several_threads_share_a_pool() -> None:
    pool = EnvThreads(2)
    results: list[list[int]] = []

    def one_loop(offset: int) -> None:
        async def main() -> list[int]:
            return await asyncio.gather(*(pool.run(lambda i=i: offset + i) for i in range(50)))

        results.append(asyncio.run(main()))

    loops = [threading.Thread(target=one_loop, args=(offset,)) for offset in (0, 1000, 2000)]
    for thread in loops:
        thread.start()
    for thread in loops:
        thread.join(10)
    assert sorted(results) == [list(range(o, o + 50)) for o in (0, 1000, 2000)]
    assert asyncio.run(pool.run(lambda: "a new loop, no shutdown between")) == "a new loop, no shutdown between"
    pool.shutdown()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
def test_no_file_descriptor_outlives_the_pool() -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    for _ in range(20):
        pool = EnvThreads(3)

        async def main(pool: EnvThreads = pool) -> list[int]:
            return await asyncio.gather(*(pool.run(lambda i=i: i) for i in range(10)))

        assert asyncio.run(main()) == list(range(10))
        pool.shutdown()
    gc.collect()
    assert open_fds() <= before
