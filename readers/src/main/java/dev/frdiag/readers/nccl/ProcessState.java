package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What one process (host and pid) has shown so far in a parse. Mutable; owned by {@link LogState}. */
final class ProcessState {
  final String host;
  final int pid;
  int launcherRank = -1;
  long lines;
  String bootstrap = "";
  String network = "";
  /** The communicator this process last printed an Init line for; later setup lines belong to it. */
  String currentCommId = "";
  /** This process's {@code comm 0x…} pointers: a pointer names a communicator only within its process. */
  final Map<String, CommRef> comms = new HashMap<>();
  final List<OpState> ops = new ArrayList<>(4);
  /** The topology dump this process is printing, or null. */
  TopologyBuilder topology;

  ProcessState(String host, int pid) {
    this.host = host;
    this.pid = pid;
  }

  NcclProcess toProcess() {
    return new NcclProcess(host, pid, launcherRank, lines, bootstrap, network);
  }

  /** Where a process's {@code comm 0x…} pointer belongs. */
  record CommRef(String commId, int rank) {}

  /** The last COLL lines of one process on one communicator. */
  static final class OpState {
    /** Calls kept per communicator: enough to meet a peer's at one opCount in a hung job's last lines. */
    static final int RECENT = 16;

    final String commPtr;
    String op = "";
    long lastOpCount;
    int nranks;
    long calls;
    long lastLine;
    /** The last {@link #RECENT} calls, oldest overwritten first. */
    final CollCall[] recent = new CollCall[RECENT];
    int recentNext;

    OpState(String commPtr) {
      this.commPtr = commPtr;
    }

    void remember(CollCall call) {
      recent[recentNext++ % RECENT] = call;
    }

    List<CollCall> recentCalls() {
      List<CollCall> out = new ArrayList<>(RECENT);
      for (int i = 0; i < RECENT; i++) {
        CollCall c = recent[(recentNext + i) % RECENT];
        if (c != null) {
          out.add(c);
        }
      }
      return out;
    }
  }
}
