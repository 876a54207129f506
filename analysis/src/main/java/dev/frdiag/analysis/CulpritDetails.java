package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Symptom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a hang's report shows of each culprit: its host, process and device, the last operation it recorded, the
 * stack it issued the stuck collective from, its records around that collective and, in a CPU stall, where its
 * Python stacks stand. {@link VerdictRules} decides who the culprits are; this class only describes them.
 */
final class CulpritDetails {
  /**
   * Culprits whose records are quoted: when half a job never issued an op, the first few show what each of them
   * holds, and thousands of copies would only swell the report.
   */
  static final int CULPRITS_WITH_RECORDS = 16;

  /** Records quoted per culprit: the grid's window holds six seqs, coalesced ones a few records each. */
  static final int MAX_RECORDS = 12;

  private final JobIndex index;
  private final StuckOperations stuck;

  CulpritDetails(JobIndex index, StuckOperations stuck) {
    this.index = index;
    this.stuck = stuck;
  }

  /** The sections of {@code culprits}, in their order; the first {@link #CULPRITS_WITH_RECORDS} quote records. */
  List<Culprit> of(List<Integer> culprits, StuckOp primary, Symptom symptom) {
    List<Culprit> details = new ArrayList<>();
    for (int c : culprits) {
      Culprit k = culprit(c, primary, details.size() < CULPRITS_WITH_RECORDS);
      RankIndex r = index.rank(c);
      String stuckAt = r != null && symptom == Symptom.CPU_STALL ? PythonStacks.stuckAt(r.evidence) : "";
      details.add(r == null || !r.evidence.hasStacks() ? k : new Culprit(k.rank(), k.host(), k.pid(),
          k.cudaDevice(), k.lastOp(), k.stack(), k.records(), stuckAt, r.evidence.stacks().getSource(),
          PythonStacks.threads(r.evidence)));
    }
    return details;
  }

  private Culprit culprit(int rank, StuckOp primary, boolean withRecords) {
    RankIndex r = index.rank(rank);
    if (r == null) {
      return new Culprit(rank, "?", 0, -1, "", List.of());
    }
    String last = r.newest == null ? "" : recordLabel(r.newest);
    CollectiveRecord at = primary == null ? null : stuck.recordsIn(primary, rank).stream().findFirst().orElse(null);
    CollectiveRecord withStack = at != null && at.getFrameIdsCount() > 0 ? at
        : r.oldestIncomplete != null && r.oldestIncomplete.getFrameIdsCount() > 0 ? r.oldestIncomplete
        : r.newest;
    List<String> stack = new ArrayList<>();
    if (withStack != null) {
      for (int id : withStack.getFrameIdsList()) {
        Frame f = r.evidence.frames().get(id);
        if (f != null) {
          stack.add(f.getName() + " (" + f.getFilename() + ":" + f.getLine() + ")");
        }
      }
    }
    List<String> records = new ArrayList<>();
    if (primary != null && withRecords) {
      for (long s = primary.seq - GroupProgress.BEFORE; s <= primary.seq + GroupProgress.AFTER; s++) {
        List<CollectiveRecord> in = s == primary.seq ? stuck.recordsIn(primary, rank)
            : index.recordsOf(rank, primary.group, s, primary.p2p);
        in.forEach(c -> records.add(recordLine(c)));
      }
    }
    if (records.isEmpty() && r.newest != null && withRecords) {
      records.add(recordLine(r.newest));
    }
    return new Culprit(rank, r.evidence.host(), r.evidence.identity().getPid(),
        r.evidence.identity().getGlobalRank() == rank ? r.evidence.identity().getCudaDevice() : -1, last, stack,
        records.size() > MAX_RECORDS ? records.subList(0, MAX_RECORDS) : records);
  }

  /**
   * One record as the rank recorded it: "record 812: pg 0 #41 all_reduce completed, in [[1024, 1024]] BFloat16,
   * out [[1024, 1024]] BFloat16, comms_id 0x…, created 2026-…Z, started +0.2 ms, completed +3.1 ms".
   */
  static String recordLine(CollectiveRecord c) {
    StringBuilder s = new StringBuilder("record ").append(c.getRecordId()).append(": pg ").append(c.getProcessGroup())
        .append(c.getIsP2P() ? " p2p#" + c.getP2PSeq() : " #" + c.getCollectiveSeq()).append(' ').append(c.getOp())
        .append(c.getIsP2P() && c.getPeer() >= 0 ? " peer " + c.getPeer() : "").append(' ')
        .append(c.getState().name().toLowerCase(Locale.ROOT));
    if (c.getInputSizesCount() > 0 || c.getInputDtypesCount() > 0) {
      s.append(", in ").append(CollectiveMatch.shapes(c.getInputSizesList())).append(' ')
          .append(String.join(",", c.getInputDtypesList()));
    }
    if (c.getOutputSizesCount() > 0 || c.getOutputDtypesCount() > 0) {
      s.append(", out ").append(CollectiveMatch.shapes(c.getOutputSizesList())).append(' ')
          .append(String.join(",", c.getOutputDtypesList()));
    }
    if (c.getCommsId() != 0) {
      s.append(", comms_id 0x").append(Long.toHexString(c.getCommsId()));
    }
    if (c.getTimeCreatedNs() > 0) {
      s.append(", created ").append(Instant.ofEpochSecond(0, c.getTimeCreatedNs()));
      if (c.getTimeStartedNs() > 0) {
        s.append(String.format(Locale.ROOT, ", started +%.1f ms", (c.getTimeStartedNs() - c.getTimeCreatedNs()) / 1e6));
      }
      if (c.getTimeCompletedNs() > 0) {
        s.append(String.format(Locale.ROOT, ", completed +%.1f ms",
            (c.getTimeCompletedNs() - c.getTimeCreatedNs()) / 1e6));
      }
    }
    return s.toString();
  }

  private static String recordLabel(CollectiveRecord r) {
    long seq = r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq();
    return r.getProcessGroup() + (r.getIsP2P() ? " p2p#" : "#") + seq + " " + r.getOp() + " ("
        + r.getState().name().toLowerCase() + ")";
  }
}
