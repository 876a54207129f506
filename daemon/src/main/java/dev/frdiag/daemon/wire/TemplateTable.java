package dev.frdiag.daemon.wire;

import dev.frdiag.daemon.registry.Job;
import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.RecordTemplate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The record templates one stream (or one dump reply) has sent, each as the job's shared copy of the fields it
 * stands for. Records are checked against it before the job takes them in, so the job never sees a record whose
 * template is unknown. Bounded at {@link RecordTemplates#MAX_PER_STREAM}, which the reporter keeps to.
 */
final class TemplateTable {

  private final Map<Integer, CollectiveRecord> byId = new HashMap<>();
  /** False for a table that only checks: it keeps no shared copy, so {@link #get} answers a placeholder. */
  private final boolean keep;

  TemplateTable() {
    this(true);
  }

  private TemplateTable(boolean keep) {
    this.keep = keep;
  }

  /** A table that checks templates and the records naming them, for a message that will not be kept. */
  static TemplateTable checkOnly() {
    return new TemplateTable(false);
  }

  /**
   * Checks and keeps {@code templates}, sent by {@code rank} of {@code job}.
   *
   * @throws IllegalArgumentException when a template is malformed, names an unannounced group, repeats an id or
   *     goes past the bound
   */
  void add(List<RecordTemplate> templates, Job job, int rank) {
    if (templates.isEmpty()) {
      // Most batches: their templates went out with an earlier one.
      return;
    }
    Map<String, Boolean> known = new HashMap<>();
    for (RecordTemplate t : templates) {
      MessageValidator.template(t, knows(known, job, rank, t.getProcessGroup()));
      if (byId.containsKey(t.getId())) {
        throw new IllegalArgumentException("record template " + t.getId() + " was sent twice");
      }
      if (byId.size() >= RecordTemplates.MAX_PER_STREAM) {
        throw new IllegalArgumentException("more than " + RecordTemplates.MAX_PER_STREAM
            + " record templates on one stream");
      }
      byId.put(t.getId(), keep ? job.template(t) : CollectiveRecord.getDefaultInstance());
    }
  }

  /**
   * Checks {@code records} of {@code rank}: each names a template of this table, or carries its own group and op.
   *
   * @throws IllegalArgumentException describing the first problem
   */
  void check(List<CollectiveRecord> records, Job job, int rank) {
    Map<String, Boolean> known = null;
    for (CollectiveRecord r : records) {
      if (r.getTemplateId() != 0) {
        MessageValidator.templated(r, byId.containsKey(r.getTemplateId()));
      } else {
        // Only whole records (older reporters) need the group lookups.
        known = known == null ? new HashMap<>() : known;
        MessageValidator.record(r, knows(known, job, rank, r.getProcessGroup()));
      }
    }
  }

  /**
   * Whether {@code rank} announced {@code group}, asked of the job once per group and message: each ask takes the
   * job's lock, and 16,384 snapshot replies of a few dozen templates each queued on it during an analysis.
   */
  private static boolean knows(Map<String, Boolean> known, Job job, int rank, String group) {
    return known.computeIfAbsent(group, g -> job.knowsGroup(rank, g));
  }

  /** The shared fields of template {@code id}; null when it was never sent. */
  CollectiveRecord get(int id) {
    return byId.get(id);
  }
}
