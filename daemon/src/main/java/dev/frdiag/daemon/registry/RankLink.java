package dev.frdiag.daemon.registry;

import dev.frdiag.proto.v1.DumpRequest;

/** The daemon's way back to a connected rank (its open stream). */
public interface RankLink {
  /** Asks the rank for a full snapshot; never blocks; a dead link ignores it. */
  void requestDump(DumpRequest request);
}
