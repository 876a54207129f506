package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Shape;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The rules by which the members' records of one operation must agree, at least as strict as PyTorch's analyzer:
 * same op, sizes and dtypes; all_reduce in = out; all_gather out numel = in numel × group size; reduce_scatter in
 * numel = out numel × group size; all_to_all (whose per-rank sizes legitimately differ) only in total numel;
 * a send's peer must issue a recv of the same size at the same p2p seq.
 */
final class CollectiveMatch {
  /** Ops whose sizes differ per rank by design; only names, dtypes and (for all_to_all) totals are compared. */
  private static final Set<String> UNEVEN = Set.of("all_to_all", "alltoall", "alltoall_base", "all_to_all_single",
      "_all_to_all_single", "scatter", "gather", "all_gather_v", "reduce_scatter_v", "alltoallv");
  private static final Set<String> ALL_TO_ALL = Set.of("all_to_all", "alltoall", "alltoall_base",
      "all_to_all_single", "_all_to_all_single", "alltoallv");
  private static final Set<String> GATHERS = Set.of("all_gather", "_all_gather_base", "all_gather_base",
      "all_gather_into_tensor", "all_gather_into_tensor_coalesced", "allgather");
  private static final Set<String> SCATTERS = Set.of("reduce_scatter", "_reduce_scatter_base",
      "reduce_scatter_tensor", "reduce_scatter_tensor_coalesced", "reducescatter");
  private static final Set<String> SAME_IN_OUT = Set.of("all_reduce", "allreduce", "allreduce_coalesced");
  private static final Set<String> NO_DTYPE_RULE = Set.of("scatter", "gather", "broadcast", "_broadcast_oop");

  private CollectiveMatch() {}

  /**
   * What one member must agree on with the others for this seq: op names, and sizes unless the op is uneven by
   * design. Equal keys mean "matches".
   */
  static List<Object> key(List<CollectiveRecord> recs) {
    List<Object> key = new ArrayList<>(recs.size() * 5);
    for (CollectiveRecord r : recs) {
      key.add(r.getOp());
      key.add(r.getInputDtypesList());
      key.add(r.getOutputDtypesList());
      if (!UNEVEN.contains(r.getOp())) {
        key.add(r.getInputSizesList());
        key.add(r.getOutputSizesList());
      }
    }
    return key;
  }

  /**
   * True when {@code a} and {@code b} are the same ops with the same sizes and dtypes (sizes compared even for
   * uneven ops): what both {@link #key} and {@link #selfCheck} read. Fields shared by reference compare at once.
   */
  static boolean sameSignature(List<CollectiveRecord> a, List<CollectiveRecord> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      CollectiveRecord x = a.get(i);
      CollectiveRecord y = b.get(i);
      if (x != y && !sameFields(x, y)) {
        return false;
      }
    }
    return true;
  }

  private static boolean sameFields(CollectiveRecord x, CollectiveRecord y) {
    return x.getOp().equals(y.getOp()) && sameElements(x.getInputSizesList(), y.getInputSizesList())
        && sameElements(x.getOutputSizesList(), y.getOutputSizesList())
        && sameElements(x.getInputDtypesList(), y.getInputDtypesList())
        && sameElements(x.getOutputDtypesList(), y.getOutputDtypesList());
  }

  /**
   * Element by element, by index: records of different ranks hold equal lists that are not one list, which
   * {@code List.equals} walks through an iterator (a million records at 16,384 ranks), while their elements are
   * mostly shared.
   */
  private static boolean sameElements(List<?> a, List<?> b) {
    if (a == b) {
      return true;
    }
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      Object x = a.get(i);
      Object y = b.get(i);
      if (x != y && !x.equals(y)) {
        return false;
      }
    }
    return true;
  }

  /** True for the record that ends a coalesced group in Flight Recorder ({@code nccl:coalesced}), recorded last. */
  static boolean isCoalescedEnd(CollectiveRecord r) {
    return r.getOp().equals("coalesced");
  }

  /** Problems within one member's own records (independent of peers), e.g. a gather whose sizes cannot fit. */
  static List<String> selfCheck(List<CollectiveRecord> recs, int groupSize) {
    List<String> problems = new ArrayList<>();
    for (CollectiveRecord r : recs) {
      String op = r.getOp();
      long in = numel(r.getInputSizesList());
      long out = numel(r.getOutputSizesList());
      // Input and output relate only when both are known (evidence from logs carries the input count alone).
      if (r.getInputSizesCount() == 0 || r.getOutputSizesCount() == 0) {
        continue;
      }
      if (SAME_IN_OUT.contains(op) && !r.getInputSizesList().equals(r.getOutputSizesList())) {
        problems.add(op + " input sizes " + shapes(r.getInputSizesList()) + " do not match its output sizes "
            + shapes(r.getOutputSizesList()));
      } else if (GATHERS.contains(op) && out != in * groupSize) {
        problems.add(op + " input numel " + in + " * group size " + groupSize + " does not match output numel "
            + out);
      } else if (SCATTERS.contains(op) && in != out * groupSize) {
        problems.add(op + " input numel " + in + " does not match output numel " + out + " * group size "
            + groupSize);
      }
      if (!NO_DTYPE_RULE.contains(op) && !r.getOutputDtypesList().isEmpty()
          && !r.getInputDtypesList().isEmpty()
          && !r.getInputDtypesList().stream().distinct().toList()
              .equals(r.getOutputDtypesList().stream().distinct().toList())) {
        problems.add(op + " input dtypes " + r.getInputDtypesList() + " do not match its output dtypes "
            + r.getOutputDtypesList());
      }
    }
    return problems;
  }

  /** True when the op (or any op of a coalesced group) is an all_to_all, whose totals must balance. */
  static boolean isAllToAll(List<CollectiveRecord> recs) {
    return recs.stream().anyMatch(r -> ALL_TO_ALL.contains(r.getOp()));
  }

  static long inputNumel(List<CollectiveRecord> recs) {
    long total = 0;
    for (CollectiveRecord r : recs) {
      total += numel(r.getInputSizesList());
    }
    return total;
  }

  static long outputNumel(List<CollectiveRecord> recs) {
    long total = 0;
    for (CollectiveRecord r : recs) {
      total += numel(r.getOutputSizesList());
    }
    return total;
  }

  /**
   * Why two P2P records at the same p2p seq of a two-member group do not pair up, or null when they do.
   */
  static String p2pProblem(int rankA, CollectiveRecord a, int rankB, CollectiveRecord b) {
    if (a.getOp().equals(b.getOp())) {
      return "ranks " + rankA + " and " + rankB + " both issued " + a.getOp() + " to each other (seq "
          + a.getP2PSeq() + "): neither receives";
    }
    if (a.getPeer() >= 0 && a.getPeer() != rankB || b.getPeer() >= 0 && b.getPeer() != rankA) {
      return "rank " + rankA + " " + a.getOp() + " names peer " + a.getPeer() + " but rank " + rankB + " "
          + b.getOp() + " names peer " + b.getPeer();
    }
    if (!a.getInputSizesList().equals(b.getInputSizesList())) {
      return "rank " + rankA + " " + a.getOp() + " of " + shapes(a.getInputSizesList()) + " pairs with rank "
          + rankB + " " + b.getOp() + " of " + shapes(b.getInputSizesList());
    }
    if (!a.getInputDtypesList().equals(b.getInputDtypesList())) {
      return "rank " + rankA + " " + a.getOp() + " " + a.getInputDtypesList() + " pairs with rank " + rankB + " "
          + b.getOp() + " " + b.getInputDtypesList();
    }
    return null;
  }

  static String describe(List<CollectiveRecord> recs) {
    return recs.stream().map(r -> r.getOp() + "(in=" + shapes(r.getInputSizesList()) + " "
        + r.getInputDtypesList() + ", out=" + shapes(r.getOutputSizesList()) + " " + r.getOutputDtypesList() + ")")
        .collect(Collectors.joining(" + "));
  }

  static long numel(List<Shape> shapes) {
    long total = 0;
    for (int i = 0; i < shapes.size(); i++) {
      // Indexed: the dims' list view would box every dim it hands out.
      Shape s = shapes.get(i);
      long n = 1;
      for (int d = 0; d < s.getDimsCount(); d++) {
        n *= s.getDims(d);
      }
      total += n;
    }
    return total;
  }

  static String shapes(List<Shape> shapes) {
    return shapes.stream().map(s -> s.getDimsList().toString()).collect(Collectors.joining(",", "[", "]"));
  }
}
