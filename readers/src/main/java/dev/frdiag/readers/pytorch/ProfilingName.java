package dev.frdiag.readers.pytorch;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Flight Recorder {@code profiling_name}: {@code "nccl:all_reduce"}, {@code "nccl:send 0->3"},
 * {@code "nccl:recv 0<-3"}, {@code "nccl:coalesced"}. Ranks in P2P names are group ranks: the issuing rank's,
 * then the peer's.
 *
 * @param backend text before the colon ("nccl", "xccl", "gloo", "ncclx"); empty when there is none
 * @param op the operation without backend or ranks
 * @param selfGroupRank for P2P names, the issuing rank's group rank; -1 otherwise
 * @param peerGroupRank for P2P names, the peer's group rank; -1 otherwise
 * @param send for P2P names, true for "->" and false for "<-"
 */
record ProfilingName(String backend, String op, int selfGroupRank, int peerGroupRank, boolean send) {
  private static final Pattern P2P = Pattern.compile("(\\d{1,9})\\s*(->|<-)\\s*(\\d{1,9})");

  /** Parses a name; never fails: what cannot be split stays in {@code op}. */
  static ProfilingName parse(String name) {
    String backend = "";
    String rest = name;
    int colon = name.indexOf(':');
    if (colon > 0 && isBackend(name, colon)) {
      backend = name.substring(0, colon);
      rest = name.substring(colon + 1);
    }
    int space = rest.indexOf(' ');
    if (space > 0) {
      Matcher m = P2P.matcher(rest.substring(space + 1).trim());
      if (m.matches()) {
        return new ProfilingName(backend, rest.substring(0, space), Integer.parseInt(m.group(1)),
            Integer.parseInt(m.group(3)), m.group(2).equals("->"));
      }
    }
    return new ProfilingName(backend, rest, -1, -1, false);
  }

  /** {@code name[0, end)} is a backend name: a letter, then letters, digits or underscores. */
  private static boolean isBackend(String name, int end) {
    for (int i = 0; i < end; i++) {
      char c = name.charAt(i);
      boolean letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (!letter && (i == 0 || !((c >= '0' && c <= '9') || c == '_'))) {
        return false;
      }
    }
    return true;
  }

  boolean hasRanks() {
    return peerGroupRank >= 0;
  }

}
