"""A small gloo training loop with a fault switch, run under torchrun by the real-PyTorch suite.

usage: torchrun ... --no-python bash wrapper.sh <job dir>

Layouts (MODE):
  dptp      tensor-parallel groups of TP consecutive ranks and data-parallel groups of strided ranks, every group made
            with dist.new_group on every rank in the same order. A step: tp all_reduce, tp all_gather, dp all_reduce,
            world all_reduce.
  pipeline  two stages, rank r of stage 0 paired with r + WORLD/2 of stage 1; each stage is a group. A step: stage 0
            sends its activation and receives the gradient back, stage 1 the reverse; a stage all_reduce; a world
            all_reduce.
  ddp       a small model under DistributedDataParallel on the world group (small buckets: several gradient
            all_reduces a step, launched by autograd hooks), then a world all_reduce of the loss for logging.

Fault switch:
  FAULT_KIND   none | stall | mismatch | pp_stall | kill | slow | extra | swap | gil_stall | raise
  FAULT_RANK   the faulty rank(s), comma separated
  FAULT_STEP   the step at which the fault fires (default 5)
  FAULT_GROUP  tp | dp | world: in front of which group's collective (stall, mismatch, kill); in ddp, world is the
               backward (its bucket all_reduces) and loader the next batch, before the forward
  stall     sleep for ever right before the collective
  mismatch  all_gather where the other members all_reduce
  pp_stall  sleep for ever before the pipeline's send (stage 0) or recv (stage 1)
  kill      SIGKILL itself before the collective
  slow      at every step, sleep FAULT_DELAY_MS (default 30) before its first collective: a straggler, not a hang
  extra     one more collective than its peers: `if rank == 0: dist.all_reduce(metric)` on the world group, right
            before its first collective of the step (FAULT_GROUP is not used)
  swap      issue the step's world all_reduce first, before the tp collectives: the same collectives as its peers in
            another order (FAULT_GROUP is not used)
  gil_stall sleep for ever inside a C call that holds the GIL (ctypes.PyDLL): no Python thread of the rank runs
            again, so it writes no dump and its worker server does not answer
  raise     raise the RuntimeError a CUDA fault raises ("CUDA error: an illegal memory access was encountered")
            right before the collective; torchrun then ends the other ranks

Mid-run dumps: DUMP_AT_SECS="1.5,3" has each rank's watcher write both dumps into <job dir>/mid-<i>/{json,pickle}
when that many seconds of training have passed by its own clock, and train on: what an on-demand or periodic dump
of a running job gives, each rank's a little apart from its peers'.

Profiling: PROFILE_STEPS > 0 runs torch.profiler (CPU activities; schedule wait 1, warmup 1, active PROFILE_STEPS)
over the first steps and writes each rank's trace as <job dir>/traces/rank<r>.<ms>.pt.trace.json, as
tensorboard_trace_handler names it; with TRACE_EXPORT=chrome as <job dir>/traces/rank<r>.json, as a user's own
prof.export_chrome_trace(f"rank{r}.json") names it (torch exports a trace once: one or the other).

Gloo has no debug pipe and never dumps on a timeout, so each rank dumps its own Flight Recorder:
  - from a watcher thread when it has made no step for HANG_SECS,
  - when a collective raises (a peer died), or on SIGTERM while in Python,
  - at the end of a run that finished.
Into <job dir>/json/trace_rank_<r> (first: ~1 ms) and <job dir>/pickle/trace_rank_<r> (the first pickle with stacks
costs seconds), each written under a temporary name and renamed, so a file that exists is complete.
<job dir>/pids/rank_<r> holds the rank's pid from its start, so the suite can end ranks that outlive torchrun.
"""
import datetime
import os
import signal
import sys
import threading
import time

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist
from torch.distributed.elastic.control_plane import worker_main

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
JOB_DIR = sys.argv[1]
MODE = os.environ.get("MODE", "dptp")
STEPS = int(os.environ.get("STEPS", "20"))
TP = int(os.environ.get("TP", "2"))
FAULT_KIND = os.environ.get("FAULT_KIND", "none")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANK", "").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "5"))
FAULT_GROUP = os.environ.get("FAULT_GROUP", "dp")
HANG_SECS = float(os.environ.get("HANG_SECS", "3"))
STEP_SLEEP = float(os.environ.get("STEP_SLEEP", "0.05"))
PG_TIMEOUT_SECS = float(os.environ.get("PG_TIMEOUT_SECS", "900"))
FAULT_DELAY = float(os.environ.get("FAULT_DELAY_MS", "30")) / 1000
PROFILE_STEPS = int(os.environ.get("PROFILE_STEPS", "0"))
DUMP_AT = [float(s) for s in os.environ.get("DUMP_AT_SECS", "").split(",") if s]
TRACE_EXPORT = os.environ.get("TRACE_EXPORT", "tensorboard")

_last_step = time.monotonic()
# Set while the profiler writes its trace (seconds on a loaded machine): no step then is no hang.
_exporting = threading.Event()
_dump_started = threading.Event()
_dump_done = threading.Event()
_sigterm = False


def log(msg):
    print(f"[rank {RANK} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def write_atomically(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)


def write_dumps(reason):
    """Writes both dumps once; a later caller waits until they are complete (a rank ends when its main thread
    raises, and would take the watcher thread's half-written pickle with it)."""
    if _dump_started.is_set():
        _dump_done.wait(120)
        return
    _dump_started.set()
    # JSON first: it takes a millisecond, the first pickle with stacks seconds (symbolizing the frames), and a rank
    # that torchrun ends may not live that long.
    for fmt, dump in (("json", c10d._dump_fr_trace_json), ("pickle", c10d._dump_fr_trace)):
        started = time.monotonic()
        data = dump()
        write_atomically(os.path.join(JOB_DIR, fmt, f"trace_rank_{RANK}"), data)
        log(f"dumped {fmt} ({len(data)} bytes, {1000 * (time.monotonic() - started):.0f} ms), {reason}")
    _dump_done.set()
    if _sigterm:
        os._exit(143)


def on_sigterm(signum, frame):
    # torchrun SIGTERMs the survivors when a rank dies. Python runs this between bytecodes of the main thread, so
    # never while it is blocked inside a collective; and it must not wait for dumps the main thread is writing.
    global _sigterm
    _sigterm = True
    if _dump_done.is_set():
        os._exit(143)
    if not _dump_started.is_set():
        write_dumps("SIGTERM")


def watch_for_hang():
    started = time.monotonic()
    pending = list(enumerate(DUMP_AT))
    while not _dump_started.wait(0.02 if pending else 0.2):
        if pending and time.monotonic() - started >= pending[0][1]:
            i, at = pending.pop(0)
            for fmt, dump in (("json", c10d._dump_fr_trace_json), ("pickle", c10d._dump_fr_trace)):
                write_atomically(os.path.join(JOB_DIR, f"mid-{i}", fmt, f"trace_rank_{RANK}"), dump())
            log(f"dumped mid-run {i} at {at:g} s")
        if not _exporting.is_set() and time.monotonic() - _last_step > HANG_SECS:
            write_dumps(f"no step for {HANG_SECS:g} s")


def sleep_forever(where):
    log(f"FAULT: stalls before {where}")
    while True:
        time.sleep(3600)


def extra_collective(step):
    """The rank-conditional collective of the `extra` fault: only the faulty ranks issue it."""
    if FAULT_KIND == "extra" and RANK in FAULT_RANKS and step == FAULT_STEP:
        log("FAULT: an all_reduce only this rank issues")
        dist.all_reduce(torch.tensor([float(step)]))


def fault(step, group, op):
    """The op to run in front of group's collective; never returns when the fault is a stall or a kill."""
    if RANK not in FAULT_RANKS or step != FAULT_STEP or group != FAULT_GROUP:
        return op
    if FAULT_KIND == "stall":
        sleep_forever(f"{op} in {group}")
    if FAULT_KIND == "gil_stall":
        log(f"FAULT: stalls holding the GIL before {op} in {group}")
        import ctypes
        ctypes.PyDLL(None).sleep(3600)
    if FAULT_KIND == "raise":
        log(f"FAULT: raises before {op} in {group}")
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
                           "asynchronously reported at some other API call, so the stacktrace below might be "
                           "incorrect.")
    if FAULT_KIND == "kill":
        log("FAULT: SIGKILL")
        os.kill(os.getpid(), signal.SIGKILL)
    if FAULT_KIND == "mismatch":
        log(f"FAULT: all_gather instead of {op} in {group}")
        return "all_gather"
    return op


def collective(op, tensor, group, size):
    if op == "all_reduce":
        dist.all_reduce(tensor, group=group)
        return tensor
    out = [torch.empty_like(tensor) for _ in range(size)]
    dist.all_gather(out, tensor, group=group)
    return torch.cat(out)


def own_group(rank_lists):
    """Makes every group on every rank, in the same order (new_group requires it); returns this rank's."""
    mine = None
    for ranks in rank_lists:
        group = dist.new_group(ranks)
        if RANK in ranks:
            mine = (group, ranks)
    return mine


def slow_down():
    """A straggler: late to its first collective of every step by FAULT_DELAY, then in step with its peers."""
    if FAULT_KIND == "slow" and RANK in FAULT_RANKS:
        time.sleep(FAULT_DELAY)


def dptp_step(step, tp, dp, w):
    (tp_group, tp_ranks), (dp_group, dp_ranks) = tp, dp
    slow_down()
    extra_collective(step)
    swapped = FAULT_KIND == "swap" and RANK in FAULT_RANKS and step == FAULT_STEP
    if swapped:
        log("FAULT: the world all_reduce before the tp collectives")
        collective("all_reduce", torch.tensor([0.0]), None, WORLD)
    h = collective(fault(step, "tp", "all_reduce"), torch.randn(4, 8) @ w, tp_group, len(tp_ranks))
    dist.all_gather([torch.empty(2, 2) for _ in tp_ranks], torch.ones(2, 2) * RANK, group=tp_group)
    grad = collective(fault(step, "dp", "all_reduce"), torch.randn_like(w), dp_group, len(dp_ranks))
    if not swapped:
        collective(fault(step, "world", "all_reduce"), torch.tensor([float(h.sum())]), None, WORLD)
    return w - 0.01 * grad[: w.shape[0]]


def pipeline_step(step, peer, stage_group):
    group, ranks = stage_group
    stalls = FAULT_KIND == "pp_stall" and RANK in FAULT_RANKS and step == FAULT_STEP
    act, grad = torch.empty(4, 8), torch.empty(4, 8)
    slow_down()
    if RANK < WORLD // 2:
        if stalls:
            sleep_forever("send to the next stage")
        dist.send(torch.randn(4, 8), dst=peer)
        dist.recv(grad, src=peer)
    else:
        if stalls:
            sleep_forever("recv from the previous stage")
        dist.recv(act, src=peer)
        grad = act * 2
        dist.send(grad, dst=peer)
    collective(fault(step, "dp", "all_reduce"), grad, group, len(ranks))
    collective(fault(step, "world", "all_reduce"), torch.tensor([float(grad.sum())]), None, WORLD)


def ddp_step(step, model, optimizer):
    slow_down()
    extra_collective(step)
    fault(step, "loader", "the next batch")
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    fault(step, "world", "backward")
    loss.backward()
    optimizer.step()
    collective(fault(step, "world", "all_reduce"), loss.detach().reshape(1), None, WORLD)


@worker_main()
def main():
    write_atomically(os.path.join(JOB_DIR, "pids", f"rank_{RANK}"), str(os.getpid()).encode())
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=PG_TIMEOUT_SECS))
    signal.signal(signal.SIGTERM, on_sigterm)
    if MODE == "dptp":
        tp = own_group([list(range(i, i + TP)) for i in range(0, WORLD, TP)])
        dp = own_group([list(range(j, WORLD, TP)) for j in range(TP)])
        w = torch.randn(8, 8)
    elif MODE == "ddp":
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 8)), bucket_cap_mb=0.1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    else:
        half = WORLD // 2
        peer = RANK + half if RANK < half else RANK - half
        stage = own_group([list(range(0, half)), list(range(half, WORLD))])
    global _last_step
    _last_step = time.monotonic()
    threading.Thread(target=watch_for_hang, name="fr-watcher", daemon=True).start()
    log(f"{MODE} job of {WORLD} ranks started")
    profiler = None
    if PROFILE_STEPS > 0:
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
        traces = os.path.join(JOB_DIR, "traces")
        if TRACE_EXPORT == "chrome":
            def on_trace_ready(prof):
                os.makedirs(traces, exist_ok=True)
                prof.export_chrome_trace(os.path.join(traces, f"rank{RANK}.json"))
        else:
            on_trace_ready = tensorboard_trace_handler(traces, worker_name=f"rank{RANK}")
        profiler = profile(activities=[ProfilerActivity.CPU],
                           schedule=schedule(wait=1, warmup=1, active=PROFILE_STEPS, repeat=1),
                           on_trace_ready=on_trace_ready)
        _exporting.set()
        profiler.start()
        _last_step = time.monotonic()
        _exporting.clear()
    try:
        for step in range(STEPS):
            _last_step = time.monotonic()
            if MODE == "dptp":
                w = dptp_step(step, tp, dp, w)
            elif MODE == "ddp":
                ddp_step(step, model, optimizer)
            else:
                pipeline_step(step, peer, stage)
            time.sleep(STEP_SLEEP)
            if profiler is not None:
                _exporting.set()
                profiler.step()
                if step == PROFILE_STEPS + 2:
                    profiler.stop()
                    profiler = None
                    log("profiler trace written")
                _last_step = time.monotonic()
                _exporting.clear()
    except Exception as e:  # a collective that raised: a peer died or timed out
        log(f"{type(e).__name__}: {str(e)[:300]}")
        write_dumps("a collective raised")
        raise
    log(f"finished {STEPS} steps")
    write_dumps("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
