package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One rank's PyTorch Flight Recorder dump, translated to the frdiag wire contract.
 *
 * <p>What the dump says is kept as it is, in particular:
 *
 * <ul>
 *   <li>{@code records} may be empty: a rank whose Python thread was wedged dumps no entries at all, which is
 *       evidence, not a reading error;
 *   <li>{@code STARTED} appears only when the job recorded start events ({@code TORCH_NCCL_ENABLE_TIMING});
 *       otherwise records go from {@code SCHEDULED} straight to {@code COMPLETED};
 *   <li>{@code record_id} counts per process and is never comparable across ranks;
 *   <li>P2P records keep the {@code collective_seq} PyTorch wrote (the group's collective count at the time),
 *       their own sequence is {@code p2p_seq}.
 * </ul>
 *
 * @param file where the dump was read from (or is meant to be written to)
 * @param rank the global rank, from the file name
 * @param version the dump format version, e.g. "2.9" (not the torch version)
 * @param commLibVersion the NCCL (or other library) version, e.g. "2.27.3"; empty when the dump has none
 * @param processGroups the groups this rank is a member of, from {@code pg_config}, in file order; {@code
 *     local_id} is PyTorch's per-process {@code pg_id} when the dump reveals it, else empty
 * @param records the entries, oldest first; frames refer to {@link #frames}
 * @param progress per-group progress from {@code pg_status}, ordered by {@code pg_id}; the P2P fields are -1
 *     (PyTorch does not report them) and {@code last_progress_ns} is 0
 * @param frames the stack frames that records refer to, by frame id
 * @param warnings what the reader noticed but could read past (unknown keys, a newer format version, …)
 */
public record FlightRecorderDump(
    Path file,
    int rank,
    String version,
    String commLibVersion,
    List<ProcessGroup> processGroups,
    List<CollectiveRecord> records,
    List<ProcessGroupProgress> progress,
    Map<Integer, Frame> frames,
    List<String> warnings) {

  public FlightRecorderDump {
    Objects.requireNonNull(file, "file");
    if (rank < 0) {
      throw new IllegalArgumentException("rank must not be negative, got " + rank);
    }
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(commLibVersion, "commLibVersion");
    processGroups = List.copyOf(processGroups);
    records = List.copyOf(records);
    progress = List.copyOf(progress);
    frames = Collections.unmodifiableMap(new TreeMap<>(frames));
    warnings = List.copyOf(warnings);
  }

  /** The same dump as if it had been read from {@code otherFile}. */
  FlightRecorderDump withFile(Path otherFile) {
    return new FlightRecorderDump(otherFile, rank, version, commLibVersion, processGroups, records, progress,
        frames, warnings);
  }

  /** The group named {@code name}, or null. */
  public ProcessGroup processGroup(String name) {
    for (ProcessGroup g : processGroups) {
      if (g.getName().equals(name)) {
        return g;
      }
    }
    return null;
  }
}
