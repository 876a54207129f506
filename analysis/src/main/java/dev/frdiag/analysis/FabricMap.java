package dev.frdiag.analysis;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.Symptom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Where a network verdict sits: for the hosts involved, their GPUs (by rank), the NIC each GPU uses and the NICs'
 * ports, each marked with the node findings that name it. Drawn only from what the nodes reported (NCCL's rank,
 * topology and transport lines, the InfiniBand ports and counters, the ranks' own identities): a GPU whose NIC no
 * line names is pictured without one rather than guessed.
 *
 * @param hosts the pictured hosts: culprit hosts first, then hosts a finding marks, then (in a job of at most
 *     {@value #MAX_HOSTS} hosts) the rest, each in name order
 * @param otherHosts hosts the nodes reported that are not pictured (no finding names them)
 */
public record FabricMap(List<Host> hosts, int otherHosts) {
  /** The most hosts pictured; a fault names one or two, and a picture of hundreds says nothing. */
  static final int MAX_HOSTS = 8;
  /** The most GPUs, NICs or ports of one host kept: a node has eight to sixteen, anything past that is noise. */
  static final int MAX_PER_HOST = 32;

  public FabricMap {
    hosts = List.copyOf(hosts);
  }

  /**
   * One finding on one element of the picture.
   *
   * @param kind what sort of fact, as the evidence list names it ({@code link_fault}, {@code quiet_counters}…)
   * @param detail the finding in words, with the line or counter delta it rests on
   * @param source where it was read ({@code nccl.log:31}, {@code infiniband/mlx5_0/ports/1/link_downed})
   * @param peer the far end it names ({@code 10.0.35.1<49189>}); empty when none
   */
  public record Mark(Evidence.Kind kind, String detail, String source, String peer) {
    public Mark {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(detail, "detail");
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(peer, "peer");
    }

    /** True for a fault; counters that did not move are a finding too, but a healthy one. */
    public boolean failing() {
      return kind != Evidence.Kind.QUIET_COUNTERS;
    }
  }

  /**
   * One GPU.
   *
   * @param rank its global rank; -1 when no line names it
   * @param device its CUDA device ordinal; -1 when unknown
   * @param busId its PCI bus id; empty when unknown
   * @param nic the NIC it uses ({@code mlx5_0}); empty when no line names one
   * @param culprit true when its rank is a culprit of the verdict
   */
  public record Gpu(int rank, int device, String busId, String nic, boolean culprit, List<Mark> marks) {
    public Gpu {
      marks = List.copyOf(marks);
    }
  }

  /** One NIC port, by its number ({@code 1} of {@code mlx5_0:1}). */
  public record Port(int number, List<Mark> marks) {
    public Port {
      marks = List.copyOf(marks);
    }
  }

  /** One NIC, by its device name. */
  public record Nic(String name, List<Port> ports, List<Mark> marks) {
    public Nic {
      ports = List.copyOf(ports);
      marks = List.copyOf(marks);
    }
  }

  /**
   * One host.
   *
   * @param culprit true when it is a culprit host of the verdict
   * @param marks findings that name the host but none of its parts
   */
  public record Host(String name, boolean culprit, List<Gpu> gpus, List<Nic> nics, List<Mark> marks) {
    public Host {
      gpus = List.copyOf(gpus);
      nics = List.copyOf(nics);
      marks = List.copyOf(marks);
    }

    /** True when a fault finding names the host or any of its parts. */
    public boolean failing() {
      return FabricMap.failing(marks) || gpus.stream().anyMatch(g -> FabricMap.failing(g.marks()))
          || nics.stream().anyMatch(n -> FabricMap.failing(n.marks())
              || n.ports().stream().anyMatch(p -> FabricMap.failing(p.marks())));
    }
  }

  /** True when one of {@code marks} is a fault, not only counters that did not move. */
  public static boolean failing(List<Mark> marks) {
    return marks.stream().anyMatch(Mark::failing);
  }

  /** True for the verdicts this picture is for: a host's own network path or the fabric between hosts. */
  public static boolean pictures(Symptom symptom) {
    return symptom == Symptom.NODE_NETWORK || symptom == Symptom.FABRIC;
  }

  /**
   * The picture of a network verdict ({@code symptom} blaming {@code culpritRanks} on {@code culpritHosts}) from
   * {@code job}'s node context and rank identities; null when the verdict is not a network one or nothing is
   * known of any host. Takes the verdict's parts rather than the {@link Diagnosis} that then holds the picture.
   */
  public static FabricMap of(JobEvidence job, Symptom symptom, List<Integer> culpritRanks,
      List<String> culpritHosts) {
    if (!pictures(symptom)) {
      return null;
    }
    Map<String, HostBuilder> all = new TreeMap<>();
    for (RankEvidence r : job.ranks()) {
      String host = r.host();
      if (!host.isEmpty() && !host.equals("?")) {
        all.computeIfAbsent(host, HostBuilder::new).gpu(r.rank(), r.identity().getCudaDevice(), "");
      }
    }
    for (NodeContext node : job.context()) {
      for (NicBinding b : node.getNicsList()) {
        HostBuilder h = all.computeIfAbsent(node.getHostname(), HostBuilder::new);
        if (b.getRank() >= 0 || b.getCudaDevice() >= 0 || !b.getGpuBusId().isEmpty()) {
          GpuBuilder g = h.gpu(b.getRank(), b.getCudaDevice(), b.getGpuBusId());
          if (g != null && g.nic.isEmpty()) {
            g.nic = b.getNic();
          }
        }
        if (!b.getNic().isEmpty()) {
          h.port(b.getNic(), b.getPort());
        }
      }
      for (int rank : node.getRanksList()) {
        all.computeIfAbsent(node.getHostname(), HostBuilder::new).gpu(rank, -1, "");
      }
    }
    for (NodeContext node : job.context()) {
      for (ContextFinding f : node.getFindingsList()) {
        Evidence.Kind kind = kindOf(f.getKind());
        if (kind == null) {
          continue;
        }
        String host = f.getHost().isEmpty() ? node.getHostname() : f.getHost();
        if (host.isEmpty()) {
          continue;
        }
        all.computeIfAbsent(host, HostBuilder::new).mark(f, new Mark(kind, f.getDetail(), f.getSource(),
            f.getPeer()));
      }
    }
    Set<String> blamedHosts = new TreeSet<>(culpritHosts);
    Set<Integer> blamedRanks = new TreeSet<>(culpritRanks);
    List<HostBuilder> chosen = new ArrayList<>();
    all.values().stream().filter(h -> blamedHosts.contains(h.name)).forEach(chosen::add);
    all.values().stream().filter(h -> !blamedHosts.contains(h.name) && h.marked()).forEach(chosen::add);
    if (all.size() <= MAX_HOSTS) {
      all.values().stream().filter(h -> !chosen.contains(h)).forEach(chosen::add);
    }
    if (chosen.isEmpty()) {
      return null;
    }
    List<Host> hosts = chosen.stream().limit(MAX_HOSTS)
        .map(h -> h.build(blamedHosts.contains(h.name), blamedRanks)).toList();
    return new FabricMap(hosts, all.size() - hosts.size());
  }

  /** The evidence kind of a node finding the picture marks; null for findings about neither GPUs nor network. */
  private static Evidence.Kind kindOf(ContextFinding.Kind kind) {
    return switch (kind) {
      case GPU_FAULT -> Evidence.Kind.GPU_FAULT;
      case LOCAL_NIC_FAULT -> Evidence.Kind.LOCAL_NIC_FAULT;
      case LINK_FAULT -> Evidence.Kind.LINK_FAULT;
      case DEAD_PEER -> Evidence.Kind.DEAD_PEER;
      case CONGESTION -> Evidence.Kind.CONGESTION;
      case QUIET -> Evidence.Kind.QUIET_COUNTERS;
      case XID_DEVICE_FAULT -> Evidence.Kind.GPU_XID;
      case PEER_PATH_ERROR -> Evidence.Kind.PEER_PATH_ERROR;
      default -> null;
    };
  }

  private static final class GpuBuilder {
    int rank;
    int device;
    String busId;
    String nic = "";
    final List<Mark> marks = new ArrayList<>();

    GpuBuilder(int rank, int device, String busId) {
      this.rank = rank;
      this.device = device;
      this.busId = busId;
    }

    boolean is(int rank, int device, String busId) {
      return (rank >= 0 && this.rank == rank) || (rank < 0 && device >= 0 && this.device == device)
          || (rank < 0 && device < 0 && !busId.isEmpty() && this.busId.equals(busId));
    }
  }

  private static final class HostBuilder {
    final String name;
    final List<GpuBuilder> gpus = new ArrayList<>();
    final Map<String, Map<Integer, List<Mark>>> ports = new TreeMap<>();
    final Map<String, List<Mark>> nicMarks = new TreeMap<>();
    final List<Mark> marks = new ArrayList<>();

    HostBuilder(String name) {
      this.name = name;
    }

    /** The GPU these name, added when new; null when the host already holds {@value #MAX_PER_HOST}. */
    GpuBuilder gpu(int rank, int device, String busId) {
      for (GpuBuilder g : gpus) {
        if (g.is(rank, device, busId)) {
          // One line may name the rank, another only its device: each fills in what the other left out.
          g.rank = g.rank < 0 ? rank : g.rank;
          g.device = g.device < 0 ? device : g.device;
          g.busId = g.busId.isEmpty() ? busId : g.busId;
          return g;
        }
      }
      if (gpus.size() >= MAX_PER_HOST) {
        return null;
      }
      GpuBuilder g = new GpuBuilder(rank, device, busId);
      gpus.add(g);
      return g;
    }

    /** The marks of a NIC port (port 0: the NIC as a whole), added when new. */
    List<Mark> port(String nic, int port) {
      if (!ports.containsKey(nic) && ports.size() >= MAX_PER_HOST) {
        return marks;
      }
      Map<Integer, List<Mark>> byPort = ports.computeIfAbsent(nic, n -> new TreeMap<>());
      if (port <= 0) {
        return nicMarks.computeIfAbsent(nic, n -> new ArrayList<>());
      }
      if (!byPort.containsKey(port) && byPort.size() >= MAX_PER_HOST) {
        return nicMarks.computeIfAbsent(nic, n -> new ArrayList<>());
      }
      return byPort.computeIfAbsent(port, p -> new ArrayList<>());
    }

    /** Puts {@code m} on the most precise part {@code f} names: a port, a NIC, a GPU, else the host. */
    void mark(ContextFinding f, Mark m) {
      List<Mark> on;
      if (!f.getNic().isEmpty()) {
        on = port(f.getNic(), f.getPort());
      } else if (f.getRank() >= 0 || f.getDevice() >= 0 || !f.getGpuBusId().isEmpty()) {
        GpuBuilder g = gpu(f.getRank(), f.getDevice(), f.getGpuBusId());
        on = g == null ? marks : g.marks;
      } else {
        on = marks;
      }
      if (on.stream().noneMatch(x -> x.kind() == m.kind() && x.detail().equals(m.detail()))) {
        on.add(m);
      }
    }

    boolean marked() {
      return !marks.isEmpty() || !nicMarks.values().stream().allMatch(List::isEmpty)
          || gpus.stream().anyMatch(g -> !g.marks.isEmpty())
          || ports.values().stream().anyMatch(p -> p.values().stream().anyMatch(l -> !l.isEmpty()));
    }

    Host build(boolean culprit, Set<Integer> culpritRanks) {
      List<Gpu> g = gpus.stream()
          .sorted(Comparator.comparingInt((GpuBuilder x) -> x.device < 0 ? Integer.MAX_VALUE : x.device)
              .thenComparingInt(x -> x.rank))
          .map(x -> new Gpu(x.rank, x.device, x.busId, x.nic, x.rank >= 0 && culpritRanks.contains(x.rank),
              x.marks))
          .toList();
      Map<String, Nic> nics = new LinkedHashMap<>();
      ports.forEach((nic, byPort) -> nics.put(nic, new Nic(nic, byPort.entrySet().stream()
          .map(e -> new Port(e.getKey(), e.getValue())).toList(), nicMarks.getOrDefault(nic, List.of()))));
      return new Host(name, culprit, g, List.copyOf(nics.values()), marks);
    }
  }
}
