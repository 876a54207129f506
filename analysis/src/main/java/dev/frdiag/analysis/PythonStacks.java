package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ThreadStack;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What the ranks' Python stack dumps say of where they are (DIAGNOSIS.md §12). A main thread inside
 * torch.distributed's Python API is inside a collective or P2P call, waiting for peers: the Flight Recorder may not
 * show it (gloo records no send/recv), its stack does. A main thread outside it is stuck where its innermost frame
 * is.
 */
final class PythonStacks {
  /** The module of torch.distributed's collectives and P2P calls; every one of them waits for peers inside it. */
  static final String DISTRIBUTED_API = "torch/distributed/distributed_c10d.py";

  private PythonStacks() {}

  /**
   * A rank's main thread, the one that issued its collectives, when its stack dump shows it with Python frames.
   *
   * @param source what the stacks were read from
   */
  record MainThread(ThreadStack thread, String source) {
    /**
     * The thread whose id is the one the rank's Flight Recorder entries carry (faulthandler prints the same
     * pthread id), else the one py-spy names "MainThread", else the last one (faulthandler prints the main thread
     * last); empty when no stack dump was read or that thread has no Python frame.
     */
    static Optional<MainThread> of(RankEvidence e) {
      List<ThreadStack> threads = e.stacks().getThreadsList();
      Optional<ThreadStack> main = recording(e)
          .flatMap(id -> threads.stream().filter(t -> t.getThreadId() == id).findFirst())
          .or(() -> threads.stream().filter(t -> t.getName().equals("MainThread")).findFirst())
          .or(() -> threads.isEmpty() ? Optional.empty() : Optional.of(threads.get(threads.size() - 1)));
      return main.filter(t -> t.getFramesCount() > 0).map(t -> new MainThread(t, e.stacks().getSource()));
    }

    /** The innermost frame in torch.distributed's Python API: the call it waits in; empty when it is outside. */
    Optional<Frame> call() {
      return thread.getFramesList().stream().filter(PythonStacks::isDistributedApi).findFirst();
    }

    /** Where it is: its innermost Python frame. */
    Frame at() {
      return thread.getFrames(0);
    }
  }

  /**
   * The lines that say what the stacks showed: for a CPU stall, where each culprit is stuck; then each rank that
   * never issued a stuck op because it waits inside a torch.distributed call.
   */
  static List<Evidence> evidence(JobIndex index, StuckOperations stuck, Cause cause, Collection<Integer> culprits) {
    List<Evidence> out = new ArrayList<>();
    for (int c : cause == Cause.CPU ? culprits : List.<Integer>of()) {
      RankIndex r = index.rank(c);
      Optional<MainThread> main = r == null ? Optional.empty() : MainThread.of(r.evidence);
      main.filter(m -> m.call().isEmpty()).ifPresent(m -> out.add(new Evidence(Evidence.Kind.PYTHON_STACK,
          List.of(c), "Rank " + c + " is at " + where(m.at()) + ", outside torch.distributed (Python stack from "
              + m.source() + "): stuck there, not waiting for a peer")));
    }
    Map<Integer, String> waiting = new TreeMap<>();
    stuck.all().forEach(n -> waiting.putAll(n.inCall()));
    waiting.forEach((rank, where) -> out.add(new Evidence(Evidence.Kind.PYTHON_STACK, List.of(rank), "Rank " + rank
        + " is inside " + where + ": waiting for a peer, not the cause (Python stack from "
        + index.rank(rank).evidence.stacks().getSource() + ")")));
    return out;
  }

  /** Where a CPU-side culprit is stuck, "sleep_forever (train.py:106)"; empty without a stack outside the API. */
  static String stuckAt(RankEvidence e) {
    return MainThread.of(e).filter(m -> m.call().isEmpty()).map(m -> where(m.at())).orElse("");
  }

  /** The rank's Python threads that have frames, as a report shows them; the worker server's own has none. */
  static List<Culprit.PythonThread> threads(RankEvidence e) {
    ThreadStack main = MainThread.of(e).map(MainThread::thread).orElse(null);
    List<Culprit.PythonThread> out = new ArrayList<>();
    for (ThreadStack t : e.stacks().getThreadsList()) {
      if (t.getFramesCount() == 0) {
        continue;
      }
      // pthread ids are addresses, far above any native thread id (Linux caps those at 2^22).
      String id = Long.compareUnsigned(t.getThreadId(), 0xFFFF_FFFFL) > 0 ? "0x" + Long.toHexString(t.getThreadId())
          : Long.toUnsignedString(t.getThreadId());
      out.add(new Culprit.PythonThread(id, t.getName(), t == main, t.getIdle(),
          t.getFramesList().stream().map(PythonStacks::where).toList()));
    }
    return out;
  }

  /** "send (distributed_c10d.py:2753)": the function, its file's name and the line. */
  static String where(Frame f) {
    String file = f.getFilename().replace('\\', '/');
    return f.getName() + " (" + file.substring(file.lastIndexOf('/') + 1) + (f.getLine() > 0 ? ":" + f.getLine()
        : "") + ")";
  }

  private static boolean isDistributedApi(Frame f) {
    return f.getFilename().replace('\\', '/').endsWith(DISTRIBUTED_API);
  }

  /** The thread id the rank's newest record names: Flight Recorder entries carry the issuing pthread id. */
  private static Optional<Long> recording(RankEvidence e) {
    List<CollectiveRecord> records = e.records();
    for (int i = records.size() - 1; i >= 0; i--) {
      String id = records.get(i).getThreadId();
      if (!id.isEmpty()) {
        try {
          return Optional.of(Long.parseUnsignedLong(id.strip()));
        } catch (NumberFormatException notDecimal) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }
}
