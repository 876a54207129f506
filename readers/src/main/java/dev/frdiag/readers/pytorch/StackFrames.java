package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.DumpValues.dict;
import static dev.frdiag.readers.pytorch.DumpValues.optionalInteger;
import static dev.frdiag.readers.pytorch.DumpValues.string;

import dev.frdiag.proto.v1.Frame;
import dev.frdiag.readers.pytorch.DumpValues.At;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The stack frames of one dump's entries, each distinct frame (name, filename, line) given one id. A rank's
 * entries repeat a few stacks thousands of times, so records refer to frames by id. Not thread-safe.
 */
final class StackFrames {
  private final ValueBudget budget;
  private final Map<Frame, Integer> ids = new HashMap<>();
  private final Map<Integer, Frame> byId = new LinkedHashMap<>();
  /** Frame dicts a pickle shares through its memo, decoded once. */
  private final Map<Object, Integer> shared = new IdentityHashMap<>();

  StackFrames(ValueBudget budget) {
    this.budget = budget;
  }

  /**
   * The id of the frame dict {@code value}, element {@code index} of the stack at {@code stackWhere}.
   *
   * @throws DumpProblem when it is not a frame
   */
  int id(Object value, Object stackWhere, int index) {
    Integer known = shared.get(value);
    if (known != null) {
      return known;
    }
    // Where it sits is only needed to name a problem: built here, past the shared frames' fast path.
    At where = new At(stackWhere, index);
    Map<?, ?> f = dict(value, where);
    budget.spend(f.size());
    Frame frame = Frame.newBuilder()
        .setName(f.containsKey("name") ? string(f.get("name"), new At(where, "name")) : "")
        .setFilename(f.containsKey("filename") ? string(f.get("filename"), new At(where, "filename")) : "")
        .setLine((int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE,
            optionalInteger(f, "line", where, 0))))
        .build();
    Integer id = ids.get(frame);
    if (id == null) {
      id = ids.size();
      ids.put(frame, id);
      byId.put(id, frame);
    }
    shared.put(value, id);
    return id;
  }

  /** The frames seen so far, by id. */
  Map<Integer, Frame> byId() {
    return byId;
  }
}
