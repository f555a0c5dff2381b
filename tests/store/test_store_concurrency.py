"""Several processes (and threads) logging at once lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

from store_helpers import make_record

from chainform.store import Store, ToolCallRecord, ToolResultRecord

PROCESSES = 4
CALLS = 40


def _writer(path: str, worker: int) -> None:
    store = Store(Path(path))
    for i in range(CALLS):
        store.write_calls(
            [
                make_record(
                    conversation_id=f"w{worker}",
                    chain_id=f"w{worker}-{i // 4}",
                    seq=i % 4,
                    prompt=f"worker {worker} call {i}",
                    schema={"worker": worker},
                    tool_calls=[ToolCallRecord(f"c{i}", "t", {"i": i})],
                    tool_results=[ToolResultRecord(f"c{i}", "t", str(i))],
                    created_at=time.time(),
                )
            ]
        )
    store.close()


def test_store_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"  # not created yet: the processes also race to create and migrate it
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w)) for w in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    with Store(path) as store:
        rows = store.recent(None)
        assert len(rows) == PROCESSES * CALLS
        assert {(r.conversation_id, r.prompt) for r in rows} == {
            (f"w{w}", f"worker {w} call {i}") for w in range(PROCESSES) for i in range(CALLS)
        }
        assert all(len(r.tool_calls) == 1 and len(r.tool_results) == 1 for r in rows)
        assert len(store.list_schemas()) == PROCESSES


def test_store_concurrent_threads_share_one_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "logs.db")
    threads = [
        threading.Thread(
            target=lambda n=n: [store.write_calls([make_record(seq=n * 100 + i)]) for i in range(25)]
        )
        for n in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.seq for r in store.recent(None)) == sorted(
        n * 100 + i for n in range(4) for i in range(25)
    )
    store.close()
