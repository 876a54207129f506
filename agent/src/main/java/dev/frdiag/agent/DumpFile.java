package dev.frdiag.agent;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.PgStatus;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's Flight Recorder dump file as the agent last saw it: the version looked at, the last dump read from
 * it or taken from the rank's worker server (cut to what the daemon accepts), or why the newest version of the
 * file could not be read. A dump already there when the agent starts is history, possibly of an earlier run, and
 * is not read.
 *
 * <p>Not thread-safe: the agent uses it under its lock.
 */
final class DumpFile {
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);

  private final int rank;
  private final AgentSettings settings;
  private final DumpReader reader;
  private final Path file;
  /** The version last looked at, read or not. */
  private FileVersion seen;
  private FlightRecorderDump last;
  private ThreadStacks lastStacks = ThreadStacks.getDefaultInstance();
  private long lastModifiedMillis;
  /** Why the newest version of the file could not be used; null when it could. */
  private String problem;

  DumpFile(int rank, AgentSettings settings, DumpReader reader) {
    this.rank = rank;
    this.settings = Objects.requireNonNull(settings, "settings");
    this.reader = Objects.requireNonNull(reader, "reader");
    this.file = settings.dumpFile(rank);
    BasicFileAttributes a = FileVersion.attributes(file);
    // A dump already there is history: it may be an earlier run's, and the daemon did not ask for it.
    this.seen = a == null ? null : FileVersion.of(a);
  }

  Path path() {
    return file;
  }

  /** The last dump read; null before the first. */
  FlightRecorderDump last() {
    return last;
  }

  /** The Python stacks taken with the last dump from the worker server; a default instance when none. */
  ThreadStacks lastStacks() {
    return lastStacks;
  }

  /**
   * Forgets the last dump: the rank's process was replaced, and the old one's records are not the new one's. The
   * file as it is now stays seen; the new process's first dump replaces it.
   */
  void forget() {
    last = null;
    lastStacks = ThreadStacks.getDefaultInstance();
    problem = null;
  }

  /**
   * A dump the rank's worker server gave, already made usable, with the Python stacks taken beside it: it is the last
   * dump from now on, as fresh as a file written at {@code atMillis}.
   */
  void took(FlightRecorderDump dump, long atMillis, ThreadStacks stacks) {
    last = dump;
    lastStacks = stacks;
    lastModifiedMillis = atMillis;
    problem = null;
    log.info("rank {}: read its Flight Recorder from its worker server ({} records)", rank, dump.records().size());
  }

  /** When the file of {@link #last} was modified, or its worker server's dump taken (epoch ms). */
  long lastModifiedMillis() {
    return lastModifiedMillis;
  }

  /** Why the newest version of the file could not be read, when it was written at or after {@code sinceMillis}. */
  String problemSince(long sinceMillis) {
    return problem != null && seen != null && seen.modifiedMillis() >= sinceMillis ? problem : null;
  }

  /**
   * Reads the file when it changed since it was last looked at.
   *
   * @param peers the last dumps of the node's other ranks, asked for only when a dump is read
   * @return true when a new dump was read
   */
  boolean lookAt(Supplier<List<FlightRecorderDump>> peers) {
    BasicFileAttributes a = FileVersion.attributes(file);
    if (a == null || !a.isRegularFile()) {
      return false;
    }
    FileVersion version = FileVersion.of(a);
    if (version.equals(seen)) {
      return false;
    }
    // Remembered even when reading fails: a dump still being written is read again once its size or time
    // changes, a corrupt one is not read again and again.
    seen = version;
    try {
      FlightRecorderDump dump = reader.read(file, rank);
      last = usable(rank, settings.worldSize(), dump, peers.get());
      // A dump file carries no stacks: those taken with an earlier worker server snapshot are not of this moment.
      lastStacks = ThreadStacks.getDefaultInstance();
      lastModifiedMillis = version.modifiedMillis();
      problem = null;
      log.info("rank {}: read dump {} ({} records, format {})", rank, file, last.records().size(),
          dump.version());
      return true;
    } catch (DumpFormatException e) {
      problem = e.getMessage();
      log.debug("rank {}: {}", rank, e.getMessage());
      return false;
    }
  }

  /**
   * The dump without what the daemon would reject (a group with no name, one this rank is not in or with members
   * beyond the world size, a record without op or creation time), so one odd dump cannot get the stream refused on every
   * reconnect.
   */
  static FlightRecorderDump usable(int rank, int worldSize, FlightRecorderDump dump,
      List<FlightRecorderDump> peers) {
    List<ProcessGroup> groups = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (ProcessGroup g : dump.processGroups()) {
      boolean inWorld = g.getRanksList().stream().allMatch(m -> m >= 0 && m < worldSize);
      if (g.getName().isEmpty()) {
        // The daemon refuses a stream that announces one (no name matches a group across ranks): seen once on a
        // live gloo job, as the whole stream refused and the rank taken for dead.
        log.warn("rank {}: a process group with no name in {} left out, with its records", rank, dump.file());
      } else if (inWorld && g.getRanksList().contains(rank)) {
        groups.add(g);
        names.add(g.getName());
      } else {
        log.warn("rank {}: process group '{}' of {} left out: {}", rank, g.getName(), dump.file(), inWorld
            ? "this rank is not one of its members " + g.getRanksList()
            : "members " + g.getRanksList() + " exceed world size " + worldSize);
      }
    }
    List<CollectiveRecord> records = new ArrayList<>(dump.records().size());
    for (CollectiveRecord r : dump.records()) {
      if (names.contains(r.getProcessGroup()) && !r.getOp().isEmpty() && r.getTimeCreatedNs() > 0
          && (r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq()) >= 0) {
        records.add(r);
      }
    }
    if (records.size() < dump.records().size()) {
      log.warn("rank {}: {} of {} records of {} left out (unknown group, no op, no time or negative seq)", rank,
          dump.records().size() - records.size(), dump.records().size(), dump.file());
    }
    // The node's other ranks' dumps help tell which groups' pg_status counts P2P seqs.
    List<FlightRecorderDump> known = new ArrayList<>(List.of(dump));
    known.addAll(peers);
    List<ProcessGroupProgress> progress = PgStatus.normalized(dump, PgStatus.seqRanges(known)).stream()
        .filter(p -> names.contains(p.getProcessGroup())).toList();
    return new FlightRecorderDump(dump.file(), dump.rank(), dump.version(), dump.commLibVersion(), groups,
        records, progress, dump.frames(), dump.warnings());
  }
}
