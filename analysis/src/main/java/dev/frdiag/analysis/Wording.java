package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Symptom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * How a diagnosis says things: the headline of each cause, the evidence lines of a stuck operation, the
 * recommendation of each symptom, and rank lists in prose. Every sentence a person reads comes from here.
 */
final class Wording {
  private final JobIndex index;

  Wording(JobIndex index) {
    this.index = index;
  }

  /** What to do next about {@code symptom}. */
  static String recommendation(Symptom symptom) {
    return switch (symptom) {
      case CPU_STALL -> "Inspect the culprit's Python stack (py-spy dump --pid PID) for what it is blocked on "
          + "instead of the collective: data loading, a lock, I/O, or a code path only some ranks take.";
      case GPU_STALL -> "Check the culprit's GPU (nvidia-smi, dmesg/Xid errors, ECC, out of memory) and drain the "
          + "node if the device is faulty.";
      case DEAD_RANK -> "Find why the process died (its stderr, dmesg for OOM-killer, the host's health) and "
          + "replace the host if it is gone.";
      case MISMATCH -> "Fix the program: the culprit issued a collective that differs from its peers' (op, size, "
          + "dtype or order). Look at the code path that builds this collective's tensors.";
      case FABRIC -> "Check the links between the hosts involved: NCCL WARN lines (status 12 = retry exceeded), "
          + "InfiniBand port counters (link_downed, symbol_error) and switch logs.";
      case NODE_NETWORK -> "Check the culprit host's NICs, GPUDirect RDMA and PCIe (NCCL WARN lines, dmesg).";
      case WATCHDOG_STUCK -> "The watchdog thread is blocked in a CUDA/NCCL call: capture a native stack "
          + "(gdb/py-spy --native) of the culprit.";
      default -> "No action needed.";
    };
  }

  /** "rank 5" or "ranks 4, 6, 7" (runs collapsed). */
  static String who(List<Integer> ranks) {
    return (ranks.size() == 1 ? "rank " : "ranks ") + bare(ranks);
  }

  /** A rank list for prose: "5" or "0-4, 6-15". */
  static String bare(List<Integer> ranks) {
    String c = Ranks.compact(ranks);
    return c.substring(1, c.length() - 1);
  }

  static String capitalize(String s) {
    return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  static String plural(List<Integer> ranks) {
    return ranks.size() == 1 ? "" : "s";
  }

  /** The verdict in one sentence. */
  String headline(Cause cause, List<Integer> culprits, StuckOp primary) {
    CollectiveRef c = primary.ref;
    String where = c.op() + " (" + c.processGroup() + (c.processGroupDesc().isEmpty() ? ""
        : " " + c.processGroupDesc()) + (c.isP2p() ? ", p2p seq " : ", seq ") + c.seq() + ")";
    String who = "Rank" + plural(culprits) + " " + bare(culprits) + hostsOf(culprits);
    return switch (cause) {
      case CPU -> who + " never issued " + where + " that " + peers(primary, culprits)
          + (waitsAlone(primary, culprits) ? " waits" : " wait") + " in: CPU-side stall.";
      case GPU -> who + " issued " + where + " but " + (culprits.size() == 1 ? "its device" : "their devices")
          + " never ran it while " + peers(primary, culprits) + " did: GPU-side stall.";
      case DEVICE_ERROR -> culprits.stream().allMatch(r -> primary.states.get(r) == MemberState.NOT_ISSUED)
          ? who + " reported a CUDA error and never issued " + where + " that " + peers(primary, culprits)
              + (waitsAlone(primary, culprits) ? " waits" : " wait") + " in: GPU fault."
          : who + " reported a CUDA error and " + (culprits.size() == 1 ? "its" : "their") + " device never ran "
              + where + ": GPU fault.";
      case DEAD -> who + (culprits.size() == 1 ? " is" : " are") + " gone (process or host died) while "
          + peers(primary, culprits) + (waitsAlone(primary, culprits) ? " waits" : " wait") + " in " + where + ".";
      case WEDGED -> who + " left no dump while " + peers(primary, culprits)
          + (waitsAlone(primary, culprits) ? " waits" : " wait") + " on " + (culprits.size() == 1 ? "it" : "them")
          + " in " + where + " with " + (waitsAlone(primary, culprits) ? "its" : "their") + " connections to "
          + (culprits.size() == 1 ? "it" : "them") + " open: alive and stuck where it could not dump (a native call "
          + "holding Python's lock, a wedged process): CPU-side stall.";
      case NO_EVIDENCE -> who + " left no usable evidence (no dump, or an unreadable one) while "
          + peers(primary, culprits) + (waitsAlone(primary, culprits) ? " waits" : " wait") + " in " + where
          + ": likely gone (process or host).";
      case MISMATCH -> !primary.timedOutInside().isEmpty()
          ? who + " disagree on what " + where + " is: " + who(primary.timedOutInside()) + " timed out inside it "
              + "while " + who(primary.finishedPast()) + " completed it and went on; they issued different "
              + "sequences of collectives: program bug."
          : who + " issued " + where + " with a different operation, size or dtype than "
              + peers(primary, culprits) + ": program bug.";
      case WATCHDOG -> who + ": the framework's watchdog itself is stuck, not the collective " + where + ".";
      case FABRIC -> "Every member started " + where + " and none completed: the network between hosts "
          + "(fabric) is the likely cause; no single rank diverged.";
    };
  }

  /** The evidence lines of one stuck operation: who is dead, never issued it, never ran it, waits, is silent. */
  List<Evidence> describe(StuckOp n) {
    List<Evidence> out = new ArrayList<>();
    String what = n.label();
    List<Integer> notIssued = n.in(MemberState.NOT_ISSUED);
    List<Integer> issued = n.in(MemberState.ISSUED);
    List<Integer> waiting = n.in(MemberState.WAITING);
    List<Integer> done = n.in(MemberState.DONE);
    List<Integer> unknown = n.in(MemberState.UNKNOWN);
    Set<Integer> dead = new TreeSet<>(n.suspects(Cause.DEAD));
    dead.addAll(n.suspects(Cause.NO_EVIDENCE));
    dead.addAll(n.suspects(Cause.WEDGED));
    for (int rank : dead) {
      RankIndex r = index.rank(rank);
      if (n.suspects(Cause.WEDGED).contains(rank)) {
        out.add(new Evidence(Evidence.Kind.RANK_LOST, List.of(rank), "Rank " + rank + " left no dump while members "
            + "of " + what + " wait on it with their connections to it open (a rank that died closes them)"));
        continue;
      }
      String why = r == null ? "sent no evidence at all"
          : r.evidence.liveness() == Liveness.LOST ? "its stream ended without a goodbye (process or host gone)"
          : r.evidence.liveness() == Liveness.UNRESPONSIVE ? "sent no snapshot: " + r.evidence.missingReason()
              + " (its process is gone or wedged)"
          : "sent no snapshot" + (r.evidence.missingReason().isEmpty() ? "" : ": " + r.evidence.missingReason());
      out.add(new Evidence(Evidence.Kind.RANK_LOST, List.of(rank), "Rank " + rank + " " + why + " while members of "
          + what + " wait on it"));
    }
    List<Integer> cpu = new ArrayList<>(notIssued);
    cpu.removeAll(dead);
    List<Integer> before = n.observedBefore();
    cpu.removeAll(before);
    if (!before.isEmpty()) {
      out.add(new Evidence(Evidence.Kind.EARLIER_CUT, before, capitalize(who(before)) + " had not issued " + what
          + " when " + (before.size() == 1 ? "its dump was" : "their dumps were") + " taken, before or as its first "
          + "member issued it: " + (before.size() == 1 ? "it" : "they") + " may have issued it since"));
    }
    if (!cpu.isEmpty()) {
      out.add(new Evidence(Evidence.Kind.NOT_ISSUED, cpu, capitalize(who(cpu)) + " never issued " + what
          + lastIssued(cpu, n)));
    }
    // Only members whose own device is to blame; the others are queued behind their own stuck ops.
    Set<Integer> deviceSuspects = new TreeSet<>(n.suspects(Cause.GPU));
    deviceSuspects.addAll(n.suspects(Cause.DEVICE_ERROR));
    List<Integer> gpu = issued.stream().filter(deviceSuspects::contains).toList();
    if (!gpu.isEmpty()) {
      boolean starts = gpu.stream().allMatch(r -> index.rank(r).recordsStarts);
      String device = gpu.size() == 1 ? "its device" : "their devices";
      out.add(new Evidence(starts ? Evidence.Kind.NOT_STARTED : Evidence.Kind.COMPLETION_LAG, gpu, capitalize(who(gpu))
          + " issued " + what + " but " + (starts ? device + " never started it" : "never completed it")
          + (waiting.isEmpty() && done.isEmpty() ? ""
              : " while " + who(union(waiting, done)) + (waiting.isEmpty() ? " completed it"
                  : " started it"))));
    }
    if (!n.timedOutInside().isEmpty()) {
      List<Integer> past = n.finishedPast();
      long furthest = past.stream().mapToLong(r -> index.track(r, n.group).completed).max().orElse(n.seq);
      out.add(new Evidence(Evidence.Kind.SEQUENCE_MISMATCH, union(n.timedOutInside(), past),
          capitalize(who(n.timedOutInside())) + " timed out inside " + what + " while " + who(past)
              + " completed it and the group's collectives after it (up to seq " + furthest + "), which need every "
              + "member's device past it: seq " + n.seq + " is not the same collective on these ranks"));
    }
    if (!waiting.isEmpty()) {
      boolean fabric = n.suspected(Cause.FABRIC);
      out.add(new Evidence(fabric ? Evidence.Kind.ALL_STARTED_NONE_COMPLETED : Evidence.Kind.WAITING, waiting,
          capitalize(who(waiting))
          + " started " + what + " and wait" + (waiting.size() == 1 ? "s" : "") + " for it to complete"
          + (fabric ? ": every member started it and none completed" : "")));
    }
    if (n.isAllIssuedNoneStarted()) {
      out.add(new Evidence(Evidence.Kind.ALL_ISSUED_NONE_COMPLETED, union(issued, waiting),
          "Every member issued " + what + " and none completed it"));
    }
    if (!unknown.isEmpty() && dead.isEmpty()) {
      out.add(new Evidence(Evidence.Kind.NO_SNAPSHOT, unknown, "No evidence from " + who(unknown)));
    }
    return out;
  }

  private String lastIssued(List<Integer> ranksNotIssued, StuckOp n) {
    if (ranksNotIssued.size() != 1) {
      return "";
    }
    RankIndex.Track t = index.track(ranksNotIssued.get(0), n.group);
    if (t == null) {
      return "";
    }
    long last = n.p2p ? t.p2pEnqueued : t.enqueued;
    return last < 0 ? " (it issued nothing on " + n.group.name() + ")"
        : " (its last issued on " + n.group.name() + " is seq " + last + ")";
  }

  private String hostsOf(List<Integer> culprits) {
    List<String> hosts = culprits.stream().map(index::host).distinct().sorted().toList();
    return hosts.equals(List.of("?")) ? "" : " (" + String.join(", ", hosts) + ")";
  }

  /** Whether {@code peers} names one rank, which takes a verb in the singular. */
  private static boolean waitsAlone(StuckOp n, List<Integer> culprits) {
    return n.states.keySet().stream().filter(r -> !culprits.contains(r)).count() == 1;
  }

  private static String peers(StuckOp n, List<Integer> culprits) {
    List<Integer> others = n.states.keySet().stream().filter(r -> !culprits.contains(r)).toList();
    return others.isEmpty() ? "its peers" : who(others);
  }

  static List<Integer> union(List<Integer> a, List<Integer> b) {
    TreeSet<Integer> s = new TreeSet<>(a);
    s.addAll(b);
    return List.copyOf(s);
  }
}
