package dev.frdiag.readers.pytorch;

import java.util.HashMap;
import java.util.Map;

/** The keys a Flight Recorder entry may have, as {@link EntryDecoder} reads them and {@link EntryDict} holds them. */
enum EntryKey {
  FRAMES("frames"), RECORD_ID("record_id"), PG_ID("pg_id"), PROCESS_GROUP("process_group"),
  THREAD_NAME("thread_name"), THREAD_ID("thread_id"), COLLECTIVE_SEQ_ID("collective_seq_id"), SEQ_ID("seq_id"),
  P2P_SEQ_ID("p2p_seq_id"), OP_ID("op_id"), PROFILING_NAME("profiling_name"), TIME_CREATED_NS("time_created_ns"),
  DURATION_MS("duration_ms"), INPUT_SIZES("input_sizes"), INPUT_DTYPES("input_dtypes"),
  OUTPUT_SIZES("output_sizes"), OUTPUT_DTYPES("output_dtypes"), STATE("state"),
  STARTED_NS("time_discovered_started_ns"), COMPLETED_NS("time_discovered_completed_ns"), RETIRED("retired"),
  TIMEOUT_MS("timeout_ms"), IS_P2P("is_p2p");

  static final int COUNT = values().length;
  /** An entry's None, as its fields hold it: null there is a key the entry lacks. */
  static final Object NONE = new Object();

  private static final EntryKey[] VALUES = values();
  private static final Map<String, EntryKey> BY_NAME = new HashMap<>();

  static {
    for (EntryKey k : VALUES) {
      BY_NAME.put(k.text, k);
    }
  }

  final String text;

  EntryKey(String text) {
    this.text = text;
  }

  /** The key named {@code text}, or null for a key entries do not have. */
  static EntryKey named(String text) {
    return BY_NAME.get(text);
  }

  static EntryKey of(int ordinal) {
    return VALUES[ordinal];
  }
}
