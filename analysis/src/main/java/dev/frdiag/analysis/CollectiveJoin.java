package dev.frdiag.analysis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Joins each rank's part in the same operation across ranks, for the straggler analysis: by (process group,
 * {@code Seq}, collective or P2P) where every member's source numbers the group's operations, with {@code Comms Id}
 * as a cross-check (it is a hash, not collision-free, so never the only key); else by (process group, order within
 * the group); for kernels whose group no source names, by the order of the rank's communication kernels.
 */
final class CollectiveJoin {
  private CollectiveJoin() {}

  /** How a collective was joined, in the report's words. */
  enum By {
    SEQ("Seq"),
    ORDER("order within the group"),
    KERNEL_ORDER("order of communication kernels (no group named)");

    final String words;

    By(String words) {
      this.words = words;
    }
  }

  /** One rank's part in a joined operation. */
  record Member(int rank, CollectiveTiming timing) {}

  /**
   * One operation as several ranks ran it.
   *
   * @param position its Seq, or its index in the group's order
   */
  record Joined(String group, By by, long position, boolean p2p, String op, String commsId, List<Member> members) {
    String label() {
      String g = group.isEmpty() ? "kernels" : group;
      return by == By.SEQ ? g + (p2p ? " p2p#" : "#") + position + " " + op : g + " " + op + " (#" + (position + 1)
          + " in order)";
    }
  }

  /**
   * What joining gave.
   *
   * @param collectives operations with two members or more, in time order
   * @param commsIdDisagreements members left out of an operation because their Comms Id differed from the others'
   * @param opDisagreements members left out of an operation joined by order because their op differed
   * @param p2pUnjoined sends and receives that have no Seq in a group of more than two (their order says nothing)
   */
  record Result(List<Joined> collectives, int commsIdDisagreements, int opDisagreements, int p2pUnjoined) {}

  /** Where a rank's part goes: its group, kind and position there. Cheap: the group key is interned. */
  private record Key(String group, boolean p2p, long position) {}

  static Result join(List<RankTimeline> ranks) {
    // One key per distinct (name, members): a group of 64 ranks spelled out per collective would cost more than the
    // collective itself (64 ranks × 6,000 collectives in a trace each).
    Map<String, Map<List<Integer>, String>> keys = new HashMap<>();
    // Which groups every member's source numbers by Seq.
    Map<String, Boolean> seqGroups = new HashMap<>();
    for (RankTimeline r : ranks) {
      for (CollectiveTiming t : r.collectives()) {
        seqGroups.merge(groupKey(keys, t), !t.group().isEmpty() && t.seq() >= 0, Boolean::logicalAnd);
      }
    }
    Map<Key, List<Member>> byKey = new LinkedHashMap<>();
    Map<Key, Joined> shape = new HashMap<>();
    int p2pUnjoined = 0;
    for (RankTimeline r : ranks) {
      Map<String, Integer> order = new HashMap<>();
      Map<String, Integer> p2pOrder = new HashMap<>();
      List<CollectiveTiming> inTime = new ArrayList<>(r.collectives());
      inTime.sort(Comparator.comparingLong(CollectiveJoin::firstTime));
      for (CollectiveTiming t : inTime) {
        String g = groupKey(keys, t);
        boolean pair = t.members().size() == 2;
        By by;
        long position;
        boolean p2p = t.p2p();
        if (seqGroups.get(g)) {
          if (p2p && !pair) {
            p2pUnjoined++;
            continue;
          }
          by = By.SEQ;
          position = t.seq();
        } else if (t.group().isEmpty()) {
          by = By.KERNEL_ORDER;
          p2p = false;
          position = order.merge(g, 1, Integer::sum) - 1;
        } else {
          if (p2p && !pair) {
            p2pUnjoined++;
            continue;
          }
          by = By.ORDER;
          position = (p2p ? p2pOrder : order).merge(g, 1, Integer::sum) - 1;
        }
        Key key = new Key(g, p2p, position);
        byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(new Member(r.rank(), t));
        if (!shape.containsKey(key)) {
          shape.put(key, new Joined(t.group(), by, position, p2p, t.op(), "", List.of()));
        }
      }
    }
    List<Joined> out = new ArrayList<>();
    int idSplits = 0;
    int opSplits = 0;
    for (Map.Entry<Key, List<Member>> e : byKey.entrySet()) {
      Joined s = shape.get(e.getKey());
      List<Member> members = e.getValue();
      if (s.by() == By.SEQ) {
        List<Member> agreeing = agreeOnCommsId(members);
        idSplits += members.size() - agreeing.size();
        members = agreeing;
      } else {
        List<Member> agreeing = agreeOnOp(members);
        opSplits += members.size() - agreeing.size();
        members = agreeing;
      }
      if (members.size() < 2) {
        continue;
      }
      String commsId = members.stream().filter(m -> m.timing().hasCommsId()).findFirst()
          .map(m -> Long.toUnsignedString(m.timing().commsId())).orElse("");
      out.add(new Joined(s.group(), s.by(), s.position(), s.p2p(), members.get(0).timing().op(), commsId,
          List.copyOf(members)));
    }
    out.sort(Comparator.comparingLong(j -> j.members().stream().mapToLong(m -> firstTime(m.timing())).min()
        .orElse(0)));
    return new Result(out, idSplits, opSplits, p2pUnjoined);
  }

  /** The members whose Comms Id is the most common one (those without one stay). */
  private static List<Member> agreeOnCommsId(List<Member> members) {
    Map<Long, Integer> counts = new HashMap<>();
    for (Member m : members) {
      if (m.timing().hasCommsId()) {
        counts.merge(m.timing().commsId(), 1, Integer::sum);
      }
    }
    if (counts.size() <= 1) {
      return members;
    }
    long id = counts.entrySet().stream().max(Map.Entry.<Long, Integer>comparingByValue()
        .thenComparing(Map.Entry.comparingByKey())).orElseThrow().getKey();
    return members.stream().filter(m -> !m.timing().hasCommsId() || m.timing().commsId() == id).toList();
  }

  /** The members whose op is the most common one's family. */
  private static List<Member> agreeOnOp(List<Member> members) {
    Map<String, Integer> counts = new HashMap<>();
    for (Member m : members) {
      counts.merge(family(m.timing().op()), 1, Integer::sum);
    }
    if (counts.size() <= 1) {
      return members;
    }
    String op = counts.entrySet().stream().max(Map.Entry.<String, Integer>comparingByValue()
        .thenComparing(Map.Entry.comparingByKey())).orElseThrow().getKey();
    return members.stream().filter(m -> family(m.timing().op()).equals(op)).toList();
  }

  private static String groupKey(Map<String, Map<List<Integer>, String>> keys, CollectiveTiming t) {
    return keys.computeIfAbsent(t.group(), g -> new HashMap<>()).computeIfAbsent(t.members(),
        m -> m.isEmpty() ? t.group() : t.group() + "\u0000" + m);
  }

  static long firstTime(CollectiveTiming t) {
    return t.issuedNs() != 0 ? t.issuedNs() : t.startNs();
  }

  private static final List<String> FAMILIES = List.of("allreduce", "allgather", "reducescatter", "alltoall",
      "broadcast", "barrier", "sendrecv", "send", "recv", "gather", "scatter", "reduce");

  /**
   * The family of an op however a source spells it: "allreduce" for "all_reduce", "allreduce" and "AllReduce";
   * "allgather" for "_allgather_base" and "all_gather_into_tensor".
   */
  static String family(String op) {
    StringBuilder b = new StringBuilder(op.length());
    for (int i = 0; i < op.length(); i++) {
      char c = op.charAt(i);
      if (Character.isLetter(c)) {
        b.append(Character.toLowerCase(c));
      }
    }
    String s = b.toString();
    for (String f : FAMILIES) {
      if (s.startsWith(f)) {
        return f;
      }
    }
    return s;
  }

  /**
   * Whether an op of this name completes on a member only once every member has joined it (all-reduce, all-gather,
   * reduce-scatter, all-to-all, barrier): its completion on one member shows that every member reached it. A
   * broadcast, reduce, gather or scatter may end on its root first, a send before its recv.
   */
  static boolean needsEveryMember(String op) {
    String f = family(op);
    return f.equals("allreduce") || f.equals("allgather") || f.equals("reducescatter") || f.equals("alltoall")
        || f.equals("barrier");
  }

  /**
   * nccl-tests' bus bandwidth factor: what each rank's links carry per byte of the operation, so figures of groups
   * of different sizes compare (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; else 1).
   */
  static double busFactor(String op, int n) {
    return switch (family(op)) {
      case "allreduce" -> 2.0 * (n - 1) / n;
      case "allgather", "reducescatter", "alltoall" -> (double) (n - 1) / n;
      default -> 1.0;
    };
  }
}
