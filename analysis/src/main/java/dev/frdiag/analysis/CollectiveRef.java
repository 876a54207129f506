package dev.frdiag.analysis;

import java.util.Objects;

/**
 * Names one operation the same way on every rank: process group, its description, the seq and whether it is P2P.
 *
 * @param processGroup process group name
 * @param processGroupDesc its description (may be empty)
 * @param seq collective_seq, or p2p_seq when {@code isP2p}
 * @param isP2p true for send/recv
 * @param op operation name as the ranks that issued it recorded it
 * @param commsId the comms_id as 16 hex digits; empty when no rank recorded one
 */
public record CollectiveRef(String processGroup, String processGroupDesc, long seq, boolean isP2p, String op,
    String commsId) {

  // equals and hashCode written out, for the reason GroupKey gives.
  @Override
  public boolean equals(Object o) {
    return o instanceof CollectiveRef r && seq == r.seq && isP2p == r.isP2p
        && Objects.equals(processGroup, r.processGroup) && Objects.equals(processGroupDesc, r.processGroupDesc)
        && Objects.equals(op, r.op) && Objects.equals(commsId, r.commsId);
  }

  @Override
  public int hashCode() {
    return ((Objects.hashCode(processGroup) * 31 + Long.hashCode(seq)) * 31 + Boolean.hashCode(isP2p)) * 31
        + Objects.hashCode(op);
  }

  /** "tp0#42 _all_gather_base" style short label. */
  public String label() {
    return processGroup + (isP2p ? " p2p#" : "#") + seq + " " + op;
  }
}
