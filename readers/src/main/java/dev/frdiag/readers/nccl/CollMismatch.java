package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Processes of one communicator whose COLL lines show different collectives at one opCount: a different op, count,
 * datatype or root where every member must agree. NCCL numbers a communicator's collectives in the order each
 * process enqueues them, so two members at one opCount with different signatures issued different programs.
 *
 * @param communicator how the members were joined: the commId, or "the log's only N-rank communicator"
 * @param opCount the opCount they disagree at
 * @param divergent the members whose signature differs from the most common one (every member on a tie)
 * @param majority the most common signature, or empty on a tie
 */
public record CollMismatch(String communicator, long opCount, List<Member> divergent, String majority) {
  public CollMismatch {
    divergent = List.copyOf(divergent);
    Objects.requireNonNull(communicator, "communicator");
    Objects.requireNonNull(majority, "majority");
  }

  /**
   * One member's call.
   *
   * @param progress the member's COLL progress on the communicator (host, pid, rank in it)
   * @param call what it enqueued at the opCount
   */
  public record Member(OpCountProgress progress, CollCall call) {}

  /**
   * The disagreements in {@code opCounts}, the earliest per communicator. Members are joined by commId where their
   * Init lines were seen; where none were, a log whose COLL lines all name one communicator size N, printed by N
   * processes, holds one communicator of N, and those are joined.
   */
  static List<CollMismatch> find(List<OpCountProgress> opCounts) {
    Map<String, List<OpCountProgress>> byComm = new LinkedHashMap<>();
    List<OpCountProgress> loose = new ArrayList<>();
    for (OpCountProgress o : opCounts) {
      if (!o.commId().isEmpty()) {
        byComm.computeIfAbsent(o.commId(), k -> new ArrayList<>()).add(o);
      } else {
        loose.add(o);
      }
    }
    if (!loose.isEmpty() && loose.stream().map(OpCountProgress::nranks).distinct().count() == 1
        && loose.size() == loose.get(0).nranks()) {
      byComm.put("the log's only " + loose.get(0).nranks() + "-rank communicator", loose);
    }
    List<CollMismatch> out = new ArrayList<>();
    byComm.forEach((comm, members) -> earliest(comm, members).ifPresent(out::add));
    return out;
  }

  private static java.util.Optional<CollMismatch> earliest(String comm, List<OpCountProgress> members) {
    if (members.size() < 2) {
      return java.util.Optional.empty();
    }
    Map<Long, List<Member>> atOpCount = new TreeMap<>();
    for (OpCountProgress o : members) {
      for (CollCall c : o.recent()) {
        if (!c.isP2p()) {
          atOpCount.computeIfAbsent(c.opCount(), k -> new ArrayList<>()).add(new Member(o, c));
        }
      }
    }
    for (Map.Entry<Long, List<Member>> e : atOpCount.entrySet()) {
      List<Member> at = e.getValue();
      Map<String, Integer> votes = new HashMap<>();
      at.forEach(m -> votes.merge(m.call().signature(), 1, Integer::sum));
      if (at.size() < 2 || votes.size() < 2) {
        continue;
      }
      int top = votes.values().stream().max(Comparator.naturalOrder()).orElseThrow();
      List<String> leaders = votes.entrySet().stream().filter(v -> v.getValue() == top).map(Map.Entry::getKey)
          .toList();
      String majority = leaders.size() == 1 ? leaders.get(0) : "";
      List<Member> divergent = at.stream().filter(m -> !m.call().signature().equals(majority)).toList();
      return java.util.Optional.of(new CollMismatch(comm, e.getKey(), divergent, majority));
    }
    return java.util.Optional.empty();
  }
}
