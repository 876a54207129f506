package dev.frdiag.daemon.registry;

import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.RecordTemplate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The record templates one rank stream has sent, kept for its job; a stream holds its own and hands it to
 * {@link Job#records} with each batch. Not thread-safe: a stream's messages come one at a time.
 */
public final class TemplateTable {

  private final Map<Integer, CollectiveRecord> byId = new HashMap<>();
  /** False for a table that only checks: it keeps no shared copy, so {@link #get} answers a placeholder. */
  private final boolean keep;

  /** An empty table for a new stream. */
  public TemplateTable() {
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
   * Checks and keeps {@code templates}, each as the job's shared copy of the fields it stands for
   * ({@code shared}). Records are checked against the table before the job takes them in, so the job never sees a
   * record whose template is unknown. Bounded at {@link RecordTemplates#MAX_PER_STREAM}, which the reporter keeps to.
   *
   * @param groupKnown whether the sending rank announced a group of this name
   * @throws IllegalArgumentException when a template is malformed, names an unannounced group, repeats an id or
   *     goes past the bound
   */
  private void add(List<RecordTemplate> templates, Predicate<String> groupKnown,
      Function<RecordTemplate, CollectiveRecord> shared) {
    for (RecordTemplate t : templates) {
      template(t, groupKnown.test(t.getProcessGroup()));
      if (byId.containsKey(t.getId())) {
        throw new IllegalArgumentException("record template " + t.getId() + " was sent twice");
      }
      if (byId.size() >= RecordTemplates.MAX_PER_STREAM) {
        throw new IllegalArgumentException("more than " + RecordTemplates.MAX_PER_STREAM
            + " record templates on one stream");
      }
      byId.put(t.getId(), keep ? shared.apply(t) : CollectiveRecord.getDefaultInstance());
    }
  }

  /**
   * Checks {@code records}: each names a template of this table, or carries its own group and op.
   *
   * @param groupKnown whether the sending rank announced a group of this name
   * @throws IllegalArgumentException describing the first problem
   */
  private void check(List<CollectiveRecord> records, Predicate<String> groupKnown) {
    for (CollectiveRecord r : records) {
      if (r.getTemplateId() != 0) {
        templated(r, byId.containsKey(r.getTemplateId()));
      } else {
        record(r, groupKnown.test(r.getProcessGroup()));
      }
    }
  }

  /**
   * Keeps a message's {@code templates} and checks its {@code records} against the table ({@link #add}, then
   * {@link #check}).
   */
  void take(List<RecordTemplate> templates, List<CollectiveRecord> records, Predicate<String> groupKnown,
      Function<RecordTemplate, CollectiveRecord> shared) {
    add(templates, groupKnown, shared);
    check(records, groupKnown);
  }

  /** The shared fields of template {@code id}; null when it was never sent. */
  CollectiveRecord get(int id) {
    return byId.get(id);
  }

  /**
   * A record that carries its own group and op (template_id 0).
   *
   * @throws IllegalArgumentException describing the first problem
   */
  static void record(CollectiveRecord r, boolean groupKnown) {
    if (!groupKnown) {
      throw new IllegalArgumentException("record " + r.getRecordId() + " names process group '"
          + abbreviate(r.getProcessGroup()) + "' that was never announced");
    }
    if (r.getOp().isEmpty()) {
      throw new IllegalArgumentException("record " + r.getRecordId() + " has no op name");
    }
    numbers(r);
  }

  /**
   * A record that names a template for its group and op.
   *
   * @param templateKnown whether its template was sent before it (or with it) on its stream or reply
   * @throws IllegalArgumentException describing the first problem
   */
  static void templated(CollectiveRecord r, boolean templateKnown) {
    if (!templateKnown) {
      throw new IllegalArgumentException("record " + r.getRecordId() + " names template " + r.getTemplateId()
          + " that was not sent before it");
    }
    numbers(r);
  }

  /** @throws IllegalArgumentException describing the first problem */
  static void template(RecordTemplate t, boolean groupKnown) {
    if (t.getId() == 0) {
      throw new IllegalArgumentException("a record template has id 0; template ids start at 1");
    }
    if (!groupKnown) {
      throw new IllegalArgumentException("record template " + t.getId() + " names process group '"
          + abbreviate(t.getProcessGroup()) + "' that was never announced");
    }
    if (t.getOp().isEmpty()) {
      throw new IllegalArgumentException("record template " + t.getId() + " has no op name");
    }
  }

  private static void numbers(CollectiveRecord r) {
    if (r.getRecordId() < 0) {
      throw new IllegalArgumentException("record_id " + Long.toUnsignedString(r.getRecordId())
          + " is beyond " + Long.MAX_VALUE);
    }
    if (r.getTimeCreatedNs() <= 0) {
      throw new IllegalArgumentException("record " + r.getRecordId() + " has no time_created_ns");
    }
    if ((r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq()) < 0) {
      throw new IllegalArgumentException("record " + r.getRecordId() + " has a negative seq");
    }
  }

  /** A group name as the rank's error status quotes it: at most 64 characters, as the wire's own checks cut them. */
  private static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }
}
