package dev.frdiag.daemon.registry;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Shape;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the records a job keeps share what its ranks repeat. A record parsed from the wire owns its strings
 * (group, op, backend, dtypes), shapes and frame-id list: about 1.2 KB each, measured at 4,096 ranks, where a
 * 1 GB heap held some 775,000 of them and little else. Ranks repeat a few of each thousands of times, so a kept
 * record takes the job's one copy of each (a protobuf builder whose repeated field is empty takes the list it
 * merges as it is).
 *
 * <p>Bounded: past {@value #MAX_DISTINCT} distinct strings or combinations a record is kept as it came, so a rank
 * that sends a new shape with every record costs its own memory, not the daemon's. Not thread-safe; the job's lock
 * guards it.
 */
final class RecordInterner {
  static final int MAX_DISTINCT = 65_536;

  /** The repeated fields of a record, compared by value. */
  private record Repeated(List<Shape> inputSizes, List<Shape> outputSizes, List<String> inputDtypes,
      List<String> outputDtypes, List<Integer> frameIds) {
    static Repeated of(CollectiveRecord r) {
      return new Repeated(r.getInputSizesList(), r.getOutputSizesList(), r.getInputDtypesList(),
          r.getOutputDtypesList(), r.getFrameIdsList());
    }
  }

  private final Map<Repeated, CollectiveRecord> templates = new HashMap<>();
  private final Map<String, String> strings = new HashMap<>();
  private final Map<Frame, Frame> frames = new HashMap<>();

  /** {@code r}, or an equal record that shares its repeated parts and strings with the records kept before it. */
  CollectiveRecord intern(CollectiveRecord r) {
    CollectiveRecord template = template(r);
    if (template == null) {
      return r;
    }
    CollectiveRecord.Builder b = r.toBuilder().clearInputSizes().clearOutputSizes().clearInputDtypes()
        .clearOutputDtypes().clearFrameIds()
        .setProcessGroup(string(r.getProcessGroup())).setOp(string(r.getOp())).setBackend(string(r.getBackend()));
    if (!r.getThreadName().isEmpty()) {
      b.setThreadName(string(r.getThreadName()));
    }
    if (!r.getThreadId().isEmpty()) {
      b.setThreadId(string(r.getThreadId()));
    }
    return b.mergeFrom(template).build();
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

  /** Distinct combinations of repeated fields kept so far. */
  int templates() {
    return templates.size();
  }

  private CollectiveRecord template(CollectiveRecord r) {
    Repeated key = Repeated.of(r);
    CollectiveRecord known = templates.get(key);
    if (known != null || templates.size() >= MAX_DISTINCT) {
      return known;
    }
    CollectiveRecord t = CollectiveRecord.newBuilder().addAllInputSizes(r.getInputSizesList())
        .addAllOutputSizes(r.getOutputSizesList()).addAllInputDtypes(interned(r.getInputDtypesList()))
        .addAllOutputDtypes(interned(r.getOutputDtypesList())).addAllFrameIds(r.getFrameIdsList()).build();
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
