package dev.frdiag.collector.reporter;

import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.RecordTemplates;
import java.util.HashMap;
import java.util.Map;

/**
 * Numbers the distinct (group, op, tensors, thread, stack) of the records sent in one scope (a stream, or a dump
 * reply), so that each is sent once as a RecordTemplate and the records name it. Bounded: past
 * {@link RecordTemplates#MAX_PER_STREAM} a record is sent whole, as the daemon refuses more. Not thread-safe.
 */
final class TemplateIds {
  private record Key(int group, int op, int inputs, int outputs, int thread, int stack) {}

  private final Map<Key, Integer> ids = new HashMap<>();

  /** The template id of {@code view} if sent before; minus a new id to send now; 0 when the table is full. */
  int idOf(RecordView view) {
    Key key = new Key(view.processGroup, view.op, view.inputs, view.outputs, view.thread, view.stack);
    Integer known = ids.get(key);
    if (known != null) {
      return known;
    }
    if (ids.size() >= RecordTemplates.MAX_PER_STREAM) {
      return 0;
    }
    int id = ids.size() + 1;
    ids.put(key, id);
    return -id;
  }

  void clear() {
    ids.clear();
  }
}
