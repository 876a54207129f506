package dev.frdiag.agent.discovery;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The processes of this node as the agent may see them; {@link ProcProcessTable} reads {@code /proc}. */
public interface ProcessTable {

  /** One process: its id, its parent's and when it started (clock ticks since boot; larger is younger). */
  record Entry(long pid, long ppid, long startTicks) {}

  /** The processes alive now, in no particular order; a process that exits while being listed is left out. */
  List<Entry> processes();

  /**
   * The environment {@code pid} started with; empty when it is unreadable (another user's process, one that
   * exited) rather than an error, since most of a node's processes are not the agent's to read.
   */
  Optional<Map<String, String>> environment(long pid);
}
