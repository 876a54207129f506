package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What an NCCL_DEBUG log says: the job's shape (processes, communicators, ranks, NICs, connections, topology) and
 * its classified events. Immutable; produced by {@link NcclLogParser}.
 *
 * <p>Stored lists are bounded by the parser's limits; counts ({@link #eventCount}) are exact.
 */
public final class NcclLog {
  private final String source;
  private final long lines;
  private final long bytes;
  private final long ncclLines;
  private final long pytorchLines;
  private final long malformedLines;
  private final NcclVersion version;
  private final List<NcclProcess> processes;
  private final List<NcclNic> nics;
  private final List<NcclCommunicator> communicators;
  private final SortedMap<Integer, NcclRank> looseRanks;
  private final List<ChannelTransport> transports;
  private final List<RingNeighbours> rings;
  private final List<TreeLinks> trees;
  private final List<ChannelSummary> channelSummaries;
  private final boolean nvls;
  private final boolean collNet;
  private final List<NcclTopology> topologies;
  private final List<GdrDecision> gdrDecisions;
  private final List<OpCountProgress> opCounts;
  private final List<NcclEvent> events;
  private final Map<NcclEventKind, Long> eventCounts;
  private final Set<NcclFlag> flags;
  private final long setupLines;
  private final long troubleLines;

  NcclLog(String source, long lines, long bytes, long ncclLines, long pytorchLines, long malformedLines,
      boolean truncatedLastLine, NcclVersion version, List<NcclProcess> processes, List<NcclNic> nics,
      boolean noIbDevice, List<NcclCommunicator> communicators, SortedMap<Integer, NcclRank> looseRanks,
      List<ChannelTransport> transports, List<RingNeighbours> rings, List<TreeLinks> trees,
      List<ChannelSummary> channelSummaries, boolean nvls, boolean collNet, List<NcclTopology> topologies,
      List<GdrDecision> gdrDecisions, List<OpCountProgress> opCounts, List<NcclEvent> events,
      Map<NcclEventKind, Long> eventCounts, boolean capped, long setupLines, long troubleLines) {
    this.setupLines = setupLines;
    this.troubleLines = troubleLines;
    this.source = source;
    this.lines = lines;
    this.bytes = bytes;
    this.ncclLines = ncclLines;
    this.pytorchLines = pytorchLines;
    this.malformedLines = malformedLines;
    this.version = version;
    this.processes = List.copyOf(processes);
    this.nics = List.copyOf(nics);
    this.communicators = List.copyOf(communicators);
    this.looseRanks = Collections.unmodifiableSortedMap(new TreeMap<>(looseRanks));
    this.transports = List.copyOf(transports);
    this.rings = List.copyOf(rings);
    this.trees = List.copyOf(trees);
    this.channelSummaries = List.copyOf(channelSummaries);
    this.nvls = nvls;
    this.collNet = collNet;
    this.topologies = List.copyOf(topologies);
    this.gdrDecisions = List.copyOf(gdrDecisions);
    this.opCounts = List.copyOf(opCounts);
    this.events = List.copyOf(events);
    this.eventCounts = Collections.unmodifiableMap(new EnumMap<>(eventCounts.isEmpty()
        ? new EnumMap<>(NcclEventKind.class) : eventCounts));

    Set<NcclFlag> f = EnumSet.noneOf(NcclFlag.class);
    boolean socket = noIbDevice;
    for (NcclProcess p : this.processes) {
      socket |= p.network().equals("Socket");
    }
    for (ChannelTransport t : this.transports) {
      socket |= t.kind() == ChannelTransport.Kind.NET && t.net().equals("Socket");
    }
    boolean rdma = false;
    for (NcclNic n : this.nics) {
      rdma |= n.rdma();
    }
    if (socket && !rdma) {
      f.add(NcclFlag.SOCKET_TRANSPORT);
    }
    for (GdrDecision g : this.gdrDecisions) {
      if (!g.enabled()) {
        f.add(NcclFlag.GDR_DISABLED);
      }
    }
    if (pytorchLines > 0 && this.events.isEmpty()) {
      f.add(NcclFlag.PYTORCH_WITHOUT_NCCL_EVENTS);
    }
    if (cause().isEmpty()) {
      f.add(NcclFlag.NO_FAILURE);
    }
    if (truncatedLastLine) {
      f.add(NcclFlag.TRUNCATED_LAST_LINE);
    }
    if (capped) {
      f.add(NcclFlag.ENTRIES_CAPPED);
    }
    if (version != null && version.inferred()) {
      f.add(NcclFlag.VERSION_INFERRED);
    }
    this.flags = Collections.unmodifiableSet(f);
  }

  /** The file or name the log was read from. */
  public String source() {
    return source;
  }

  /** Lines read. */
  public long lineCount() {
    return lines;
  }

  /** Bytes read (0 when parsed from strings). */
  public long byteCount() {
    return bytes;
  }

  /**
   * True when the log shows NCCL setting its communicators up or tearing them down cleanly (Init COMPLETE,
   * Connected all rings/trees, Destroy COMPLETE) and not one line that may report trouble: no WARN, no event but
   * clean destroys (an {@code Abort COMPLETE} is the error path), and no error, exception, traceback, timeout or
   * abort in a line that is not NCCL's. Positive evidence that nothing failed while the log was written.
   */
  public boolean showsHealthySetup() {
    return setupLines > 0 && troubleLines == 0
        && eventCounts.keySet().stream().allMatch(k -> k == NcclEventKind.COMM_DESTROYED);
  }

  /**
   * True when the log shows a healthy setup ({@link #showsHealthySetup}) and NCCL destroying communicators the
   * normal way (Destroy COMPLETE): its processes reached their teardown, which set-up lines alone do not show.
   */
  public boolean showsCleanTeardown() {
    return showsHealthySetup() && eventCounts.getOrDefault(NcclEventKind.COMM_DESTROYED, 0L) > 0;
  }

  /** Lines with an NCCL prefix ({@code host:pid:tid [dev] NCCL INFO|WARN|TRACE|CALL}). */
  public long ncclLineCount() {
    return ncclLines;
  }

  /** Lines written by PyTorch's ProcessGroupNCCL (watchdog, errors); the parser only counts them. */
  public long pytorchLineCount() {
    return pytorchLines;
  }

  /** NCCL-looking lines whose values could not be read (kept out of the result, counted here). */
  public long malformedLineCount() {
    return malformedLines;
  }

  /** True when the last line had no newline. */
  public boolean truncatedLastLine() {
    return flags.contains(NcclFlag.TRUNCATED_LAST_LINE);
  }

  /** The NCCL version, printed or inferred; empty when the log gives no clue. */
  public Optional<NcclVersion> version() {
    return Optional.ofNullable(version);
  }

  /** Every process that printed NCCL lines, in order of first line. */
  public List<NcclProcess> processes() {
    return processes;
  }

  /** The hosts that printed NCCL lines, sorted. */
  public Set<String> hosts() {
    Set<String> hosts = new TreeSet<>();
    for (NcclProcess p : processes) {
      hosts.add(p.host());
    }
    return hosts;
  }

  /** The networks in use: from {@code Using network X} lines and from {@code via NET/X/…} connections. */
  public Set<String> networks() {
    Set<String> nets = new TreeSet<>();
    for (NcclProcess p : processes) {
      if (!p.network().isEmpty()) {
        nets.add(p.network());
      }
    }
    for (ChannelTransport t : transports) {
      if (!t.net().isEmpty()) {
        nets.add(t.net());
      }
    }
    return nets;
  }

  /** The NICs NCCL said it uses, once per host. */
  public List<NcclNic> nics() {
    return nics;
  }

  /** The communicators seen in Init lines, in order of first line. */
  public List<NcclCommunicator> communicators() {
    return communicators;
  }

  /**
   * Where each rank runs: the largest communicator's ranks when Init lines were seen; otherwise ranks placed by
   * the connection and ring lines their processes printed, and, for processes those lines do not place, by the
   * launcher's output tag ({@code [3]}, {@code [1,3]<stdout>:}), which equals the world rank for mpirun.
   */
  public SortedMap<Integer, NcclRank> ranks() {
    NcclCommunicator largest = null;
    for (NcclCommunicator c : communicators) {
      if (largest == null || c.nranks() > largest.nranks()) {
        largest = c;
      }
    }
    return largest == null ? looseRanks : largest.ranks();
  }

  /** Per-channel connection lines, in line order. */
  public List<ChannelTransport> transports() {
    return transports;
  }

  /** How many connection lines use each transport. */
  public Map<ChannelTransport.Kind, Long> transportCounts() {
    Map<ChannelTransport.Kind, Long> counts = new EnumMap<>(ChannelTransport.Kind.class);
    for (ChannelTransport t : transports) {
      counts.merge(t.kind(), 1L, Long::sum);
    }
    return counts;
  }

  /** {@code Ring NN : prev -> rank -> next} lines. */
  public List<RingNeighbours> rings() {
    return rings;
  }

  /** {@code Trees} lines, one entry per channel. */
  public List<TreeLinks> trees() {
    return trees;
  }

  /** {@code N coll channels, …} lines. */
  public List<ChannelSummary> channelSummaries() {
    return channelSummaries;
  }

  /** True when NVLS (NVLink SHARP) is available or has channels. */
  public boolean nvlsPresent() {
    return nvls;
  }

  /** True when CollNet lines appear or CollNet has channels. */
  public boolean collNetPresent() {
    return collNet;
  }

  /** Topology dumps, the first per host. */
  public List<NcclTopology> topologies() {
    return topologies;
  }

  /** {@code GPU Direct RDMA Enabled|Disabled} lines. */
  public List<GdrDecision> gdrDecisions() {
    return gdrDecisions;
  }

  /** The last COLL opCount of every process on every communicator. */
  public List<OpCountProgress> opCounts() {
    return opCounts;
  }

  /**
   * Ranks whose last enqueued opCount is below the highest of their communicator: they stopped issuing
   * collectives their peers issued (CPU side), lowest first. Only communicators whose Init lines were seen are
   * compared, since the commId is what joins processes.
   */
  public List<OpCountProgress> laggards() {
    Map<String, List<OpCountProgress>> byComm = new LinkedHashMap<>();
    for (OpCountProgress o : opCounts) {
      if (!o.commId().isEmpty()) {
        byComm.computeIfAbsent(o.commId(), k -> new ArrayList<>()).add(o);
      }
    }
    List<OpCountProgress> out = new ArrayList<>();
    for (List<OpCountProgress> group : byComm.values()) {
      if (group.size() < 2) {
        continue;
      }
      long max = group.stream().mapToLong(OpCountProgress::lastOpCount).max().orElse(0);
      for (OpCountProgress o : group) {
        if (o.lastOpCount() < max) {
          out.add(o);
        }
      }
    }
    out.sort(Comparator.comparingLong(OpCountProgress::lastOpCount).thenComparingInt(OpCountProgress::rank));
    return out;
  }

  /**
   * Communicators whose members' COLL lines show different collectives at one opCount (the earliest such opCount
   * per communicator): a program mismatch read from NCCL's own lines.
   */
  public List<CollMismatch> collMismatches() {
    return CollMismatch.find(opCounts);
  }

  /** The stored events in line order (the first ones of each kind, up to the parser's limit). */
  public List<NcclEvent> events() {
    return events;
  }

  /** The stored events by cause: the likely cause first ({@link NcclEvent#BY_CAUSE}). */
  public List<NcclEvent> eventsByCause() {
    List<NcclEvent> sorted = new ArrayList<>(events);
    sorted.sort(NcclEvent.BY_CAUSE);
    return sorted;
  }

  /** The event most likely to be the cause, or empty when no event is a lead ({@link FaultDomain#isLead}). */
  public Optional<NcclEvent> cause() {
    NcclEvent best = null;
    for (NcclEvent e : events) {
      if (e.domain().isLead() && (best == null || NcclEvent.BY_CAUSE.compare(e, best) < 0)) {
        best = e;
      }
    }
    return Optional.ofNullable(best);
  }

  /** How many events of {@code kind} the log has, including those not stored. */
  public long eventCount(NcclEventKind kind) {
    return eventCounts.getOrDefault(kind, 0L);
  }

  /** How many events of each kind the log has. */
  public Map<NcclEventKind, Long> eventCounts() {
    return eventCounts;
  }

  /** Facts worth reporting even when nothing failed. */
  public Set<NcclFlag> flags() {
    return flags;
  }

  /** A few lines for a person: shape, version, flags, then the events by cause. */
  public String summary() {
    StringBuilder b = new StringBuilder();
    b.append(source).append(": ").append(lines).append(" lines, ").append(ncclLines).append(" NCCL, ")
        .append(pytorchLines).append(" PyTorch\n");
    b.append("NCCL version: ").append(version == null ? "unknown" : version.toString()).append('\n');
    if (!processes.isEmpty()) {
      b.append("hosts: ").append(String.join(", ", hosts())).append(" (").append(processes.size())
          .append(processes.size() == 1 ? " process)\n" : " processes)\n");
    }
    SortedMap<Integer, NcclRank> ranks = ranks();
    if (!ranks.isEmpty()) {
      b.append("ranks:");
      int shown = 0;
      for (NcclRank r : ranks.values()) {
        if (shown++ == 16) {
          b.append(" …");
          break;
        }
        b.append(' ').append(r.rank()).append('=').append(r.host()).append(':').append(r.pid());
      }
      b.append('\n');
    }
    if (!networks().isEmpty()) {
      b.append("network: ").append(String.join(", ", networks())).append('\n');
    }
    if (!transports.isEmpty()) {
      b.append("connections: ").append(transportCounts()).append('\n');
    }
    for (NcclFlag f : flags) {
      b.append("flag: ").append(f.description()).append('\n');
    }
    for (OpCountProgress o : laggards()) {
      b.append("behind: rank ").append(o.rank()).append(" on ").append(o.host()).append(':').append(o.pid())
          .append(" last opCount ").append(Long.toHexString(o.lastOpCount())).append('\n');
    }
    Optional<NcclEvent> cause = cause();
    cause.ifPresent(e -> b.append("cause: ").append(e).append('\n'));
    int shown = 0;
    for (NcclEvent e : eventsByCause()) {
      if (cause.isPresent() && e == cause.get()) {
        continue;
      }
      if (!e.domain().isLead() || shown++ == 5) {
        break;
      }
      b.append("also: ").append(e).append('\n');
    }
    if (!eventCounts.isEmpty()) {
      b.append("events: ").append(eventCounts).append('\n');
    }
    return b.toString();
  }

  @Override
  public String toString() {
    return "NcclLog[" + source + ", " + lines + " lines, " + events.size() + " events]";
  }
}
