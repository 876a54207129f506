package dev.frdiag.daemon.registry;

import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.RecordTemplate;
import dev.frdiag.proto.v1.Shape;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Makes the records a job keeps share what its ranks repeat. A record parsed from the wire owns its strings
 * (group, op, backend, dtypes), shapes and frame-id list: about 1.2 KB each, measured at 4,096 ranks, where a
 * 1 GB heap held some 775,000 of them and little else. Ranks repeat a few of each thousands of times, so a kept
 * record takes the job's one copy of each (a protobuf builder whose repeated field is empty takes the list it
 * merges as it is).
 *
 * <p>Bounded: past {@value #MAX_DISTINCT} distinct strings, shape combinations or stacks, a record keeps its own copy
 * of what is new, so a rank that sends a new shape with every record costs its own memory, not the daemon's. Not
 * thread-safe; the job's lock guards it.
 */
final class RecordInterner {
  static final int MAX_DISTINCT = 65_536;

  /**
   * The repeated fields of a record but its stack, compared by value. The stack is kept apart: frame ids are numbered
   * by each rank in its own order, so stacks times shapes would multiply into more combinations than the bound.
   */
  private record Repeated(List<Shape> inputSizes, List<Shape> outputSizes, List<String> inputDtypes,
      List<String> outputDtypes) {
    static Repeated of(CollectiveRecord r) {
      return new Repeated(r.getInputSizesList(), r.getOutputSizesList(), r.getInputDtypesList(),
          r.getOutputDtypesList());
    }
  }

  private final Map<Repeated, CollectiveRecord> templates = new HashMap<>();
  /** One record holding only each distinct frame-id list, to merge from: a merge shares its list. */
  private final Map<List<Integer>, CollectiveRecord> stacks = new HashMap<>();
  private final Map<String, String> strings = new HashMap<>();
  private final Map<Frame, Frame> frames = new HashMap<>();

  /** {@code r}, or an equal record that shares its repeated parts and strings with the records kept before it. */
  CollectiveRecord intern(CollectiveRecord r) {
    CollectiveRecord template = template(r);
    CollectiveRecord stack = stack(r);
    CollectiveRecord.Builder b = r.toBuilder()
        .setProcessGroup(string(r.getProcessGroup())).setOp(string(r.getOp())).setBackend(string(r.getBackend()));
    if (!r.getThreadName().isEmpty()) {
      b.setThreadName(string(r.getThreadName()));
    }
    if (!r.getThreadId().isEmpty()) {
      b.setThreadId(string(r.getThreadId()));
    }
    if (template != null) {
      b.clearInputSizes().clearOutputSizes().clearInputDtypes().clearOutputDtypes().mergeFrom(template);
    }
    if (stack != null) {
      b.clearFrameIds().mergeFrom(stack);
    }
    return b.build();
  }

  /** The job's shared copy of what {@code template} stands for, for the records that name it. */
  CollectiveRecord shared(RecordTemplate template) {
    return intern(RecordTemplates.fields(template).build());
  }

  /**
   * {@code reply} with its records whole (those naming a template completed with {@code templates}' shared copy of
   * it) and sharing, as its frames do, what the job's kept records repeat; its templates are then of no use. A
   * snapshot of every rank arrives at once, and as parsed from the wire it took four times the memory of the windows
   * themselves (a 1 GB heap filled at 4,096 ranks before any reply was read).
   */
  DumpReply shared(DumpReply reply, IntFunction<CollectiveRecord> templates) {
    if (reply.getRecordsCount() == 0 && reply.getFramesCount() == 0) {
      return reply;
    }
    DumpReply.Builder b = reply.toBuilder().clearRecords().clearFrames().clearTemplates();
    for (CollectiveRecord r : reply.getRecordsList()) {
      b.addRecords(r.getTemplateId() != 0 ? RecordTemplates.complete(templates.apply(r.getTemplateId()), r)
          : intern(r));
    }
    for (InternedFrame f : reply.getFramesList()) {
      b.addFrames(f.toBuilder().setFrame(frame(f.getFrame())));
    }
    return b.build();
  }

  /**
   * {@code f}, or the job's equal copy: every rank of a job sends the same few dozen stack frames in its own frame
   * table, 16,384 copies of each at 16,384 ranks (0.6 million frames and their 1.2 million strings).
   */
  Frame frame(Frame f) {
    Frame known = frames.get(f);
    if (known != null) {
      return known;
    }
    if (frames.size() < MAX_DISTINCT) {
      frames.put(f, f);
    }
    return f;
  }

  /** Whether the job already holds a frame equal to {@code f}. */
  boolean knowsFrame(Frame f) {
    return frames.containsKey(f);
  }

  /** Distinct combinations of repeated fields kept so far, stacks apart. */
  int templates() {
    return templates.size();
  }

  /** Distinct stacks (frame-id lists) kept so far. */
  int stacks() {
    return stacks.size();
  }

  private CollectiveRecord stack(CollectiveRecord r) {
    if (r.getFrameIdsCount() == 0) {
      return null;
    }
    CollectiveRecord known = stacks.get(r.getFrameIdsList());
    if (known != null || stacks.size() >= MAX_DISTINCT) {
      return known;
    }
    CollectiveRecord s = CollectiveRecord.newBuilder().addAllFrameIds(r.getFrameIdsList()).build();
    stacks.put(s.getFrameIdsList(), s);
    return s;
  }

  private CollectiveRecord template(CollectiveRecord r) {
    Repeated key = Repeated.of(r);
    CollectiveRecord known = templates.get(key);
    if (known != null || templates.size() >= MAX_DISTINCT) {
      return known;
    }
    CollectiveRecord t = CollectiveRecord.newBuilder().addAllInputSizes(r.getInputSizesList())
        .addAllOutputSizes(r.getOutputSizesList()).addAllInputDtypes(interned(r.getInputDtypesList()))
        .addAllOutputDtypes(interned(r.getOutputDtypesList())).build();
    // The key holds the template's own lists, not the record's: the record may be dropped from the window.
    templates.put(Repeated.of(t), t);
    return t;
  }

  private List<String> interned(List<String> values) {
    return values.stream().map(this::string).toList();
  }

  private String string(String s) {
    String known = strings.get(s);
    if (known != null) {
      return known;
    }
    if (strings.size() >= MAX_DISTINCT) {
      return s;
    }
    strings.put(s, s);
    return s;
  }
}
