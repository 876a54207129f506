package dev.frdiag.proto;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.RecordTemplate;

/**
 * The one mapping between a {@link RecordTemplate} and the fields of {@link CollectiveRecord} it stands for, for
 * the sender that makes templates and the receiver that reads records by them.
 */
public final class RecordTemplates {
  /** Most templates one stream (or one dump reply) may define; past it a sender sends whole records. */
  public static final int MAX_PER_STREAM = 65_536;

  private RecordTemplates() {}

  /** The template of {@code record}'s group, op, tensors, thread, stack and backend, numbered {@code id}. */
  public static RecordTemplate of(int id, CollectiveRecord record) {
    return RecordTemplate.newBuilder()
        .setId(id)
        .setProcessGroup(record.getProcessGroup())
        .setOp(record.getOp())
        .addAllInputSizes(record.getInputSizesList())
        .addAllOutputSizes(record.getOutputSizesList())
        .addAllInputDtypes(record.getInputDtypesList())
        .addAllOutputDtypes(record.getOutputDtypesList())
        .setThreadName(record.getThreadName())
        .setThreadId(record.getThreadId())
        .addAllFrameIds(record.getFrameIdsList())
        .setBackend(record.getBackend())
        .build();
  }

  /** A record holding only what {@code template} stands for, to be completed with a record's own fields. */
  public static CollectiveRecord.Builder fields(RecordTemplate template) {
    return CollectiveRecord.newBuilder()
        .setProcessGroup(template.getProcessGroup())
        .setOp(template.getOp())
        .addAllInputSizes(template.getInputSizesList())
        .addAllOutputSizes(template.getOutputSizesList())
        .addAllInputDtypes(template.getInputDtypesList())
        .addAllOutputDtypes(template.getOutputDtypesList())
        .setThreadName(template.getThreadName())
        .setThreadId(template.getThreadId())
        .addAllFrameIds(template.getFrameIdsList())
        .setBackend(template.getBackend());
  }

  /**
   * The whole record {@code naming} stands for, given {@code shared}: the record holding its template's fields
   * ({@link #fields}, built).
   */
  public static CollectiveRecord complete(CollectiveRecord shared, CollectiveRecord naming) {
    return shared.toBuilder().mergeFrom(naming).setTemplateId(0).build();
  }

  /** {@code record} without what its template stands for, naming template {@code id} instead: what a sender sends. */
  public static CollectiveRecord naming(CollectiveRecord record, int id) {
    return record.toBuilder().clearProcessGroup().clearOp().clearInputSizes().clearOutputSizes().clearInputDtypes()
        .clearOutputDtypes().clearThreadName().clearThreadId().clearFrameIds().clearBackend().setTemplateId(id)
        .build();
  }
}
