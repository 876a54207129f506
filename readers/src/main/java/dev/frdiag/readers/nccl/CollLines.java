package dev.frdiag.readers.nccl;

import static dev.frdiag.readers.nccl.Ascii.allDigits;
import static dev.frdiag.readers.nccl.Ascii.digits;
import static dev.frdiag.readers.nccl.Ascii.hex;

import dev.frdiag.readers.nccl.ProcessState.OpState;

/**
 * COLL lines ({@code NCCL_DEBUG_SUBSYS=COLL}), {@code AllReduce: opCount 1a sendbuff … comm 0x… [nranks=16] …}:
 * keeps each process's last opCount per communicator, which shows the rank that stopped issuing. Most lines of a
 * hung job's log are these, so this is on the hot path: index arithmetic only, no allocation once a communicator
 * is known.
 */
final class CollLines {
  /** More communicators than this in one process is not a real job; the rest are counted as dropped. */
  private static final int MAX_COMMS_PER_PROCESS = 1024;
  /** The longest collective name NCCL prints before {@code ": opCount "}. */
  private static final int MAX_OP_NAME = 24;

  private long dropped;

  /** The index of {@code ": opCount "} when the message at {@code ms} is a COLL line, else -1. */
  static int opCountColon(String s, int ms) {
    int colon = s.indexOf(':', ms);
    return colon > ms && colon - ms <= MAX_OP_NAME && s.startsWith(": opCount ", colon) ? colon : -1;
  }

  /** Takes a COLL line whose op name ends at {@code colon}. */
  void accept(String s, int ms, int colon, ProcessState p, long lineNumber) {
    int n = s.length();
    int at = colon + 10;
    int sp = s.indexOf(' ', at);
    if (sp < 0) {
      return;
    }
    long opCount = hex(s, at, sp);
    int c = s.indexOf(" comm 0x", sp);
    if (opCount < 0 || c < 0) {
      return;
    }
    int cs = c + 6;
    int ce = s.indexOf(' ', cs);
    if (ce < 0) {
      ce = n;
    }
    int nranks = -1;
    int nr = s.indexOf("[nranks=", ce);
    if (nr >= 0) {
      int close = s.indexOf(']', nr);
      if (close > nr + 8 && allDigits(s, nr + 8, close)) {
        nranks = (int) digits(s, nr + 8, close);
      }
    }
    OpState st = null;
    for (OpState o : p.ops) {
      if (o.commPtr.length() == ce - cs && s.regionMatches(cs, o.commPtr, 0, ce - cs)) {
        st = o;
        break;
      }
    }
    if (st == null) {
      if (p.ops.size() >= MAX_COMMS_PER_PROCESS) {
        dropped++;
        return;
      }
      st = new OpState(s.substring(cs, ce));
      p.ops.add(st);
    }
    if (st.op.length() != colon - ms || !s.regionMatches(ms, st.op, 0, colon - ms)) {
      st.op = s.substring(ms, colon).intern();
    }
    st.lastOpCount = opCount;
    st.nranks = nranks;
    st.calls++;
    st.lastLine = lineNumber;
    st.remember(new CollCall(opCount, st.op, field(s, " count ", sp, c), (int) field(s, " datatype ", sp, c),
        (int) field(s, " root ", sp, c), lineNumber));
  }

  /** The decimal after {@code name} between {@code from} and {@code to}, or -1. */
  private static long field(String s, String name, int from, int to) {
    int k = s.indexOf(name, from);
    if (k < 0 || k >= to) {
      return -1;
    }
    int start = k + name.length();
    int end = start;
    while (end < to && end - start < 18 && Ascii.isDigit(s.charAt(end))) {
      end++;
    }
    return end == start ? -1 : digits(s, start, end);
  }

  /** COLL lines not followed because their process had too many communicators. */
  long dropped() {
    return dropped;
  }
}
