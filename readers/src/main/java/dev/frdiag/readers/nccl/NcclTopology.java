package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A host's topology as NCCL printed it ({@code === System : maxBw … totalBw … ===} and the tree below it), with the
 * PCIe paths from every GPU to every NIC.
 *
 * @param host the printing host, empty when the dump was pasted without its line prefixes
 * @param pid the printing process, -1 when unknown
 * @param maxBw the {@code maxBw} of the header, GB/s
 * @param totalBw the {@code totalBw} of the header, GB/s
 * @param nodes every node, once, in the order first printed
 * @param links every printed link, parent to child
 * @param paths for every GPU and every NIC, the path between them, ordered by GPU then closeness
 * @param complete false when the dump ended before its closing {@code ====} line
 * @param lineNumber where the header is
 */
public record NcclTopology(String host, int pid, double maxBw, double totalBw, List<Node> nodes, List<Link> links,
    List<GpuNicPath> paths, boolean complete, long lineNumber) {

  /**
   * One node: {@code GPU/4000 (0)}, {@code NIC/6000}, {@code NET/0 (0/0/25.000000)}, {@code CPU/0 (1/1/2)}.
   *
   * @param type {@code CPU}, {@code PCI}, {@code GPU}, {@code NIC}, {@code NET}, {@code NVS}
   * @param id the id after the slash ({@code 4000} up to 2.20, {@code 0-4000} from 2.21)
   * @param detail the text in parentheses, or empty; for a GPU, its rank
   */
  public record Node(String type, String id, String detail) {
    public Node {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(detail, "detail");
    }

    /** {@code TYPE/id}, how NCCL names the node. */
    public String name() {
      return type + "/" + id;
    }

    /** For a GPU, the rank in parentheses; -1 otherwise or when absent. */
    public int gpuRank() {
      if (!type.equals("GPU") || detail.isEmpty()) {
        return -1;
      }
      try {
        return Integer.parseInt(detail);
      } catch (NumberFormatException e) {
        return -1;
      }
    }
  }

  /**
   * One printed link: {@code + PCI[24.0] - GPU/4000}.
   *
   * @param from the parent node's name
   * @param to the child node's name
   * @param type {@code LOC}, {@code NVL}, {@code C2C}, {@code PCI}, {@code SYS}, {@code NET}
   * @param bandwidth GB/s
   */
  public record Link(String from, String to, String type, double bandwidth) {
    public Link {
      Objects.requireNonNull(from, "from");
      Objects.requireNonNull(to, "to");
      Objects.requireNonNull(type, "type");
    }
  }

  /** How far apart a GPU and a NIC are, in NCCL's path names, closest first. */
  public enum PathType {
    /** Through at most one PCIe switch. */
    PIX,
    /** Through several PCIe switches, not through a CPU. */
    PXB,
    /** Through a CPU's PCIe host bridge. */
    PHB,
    /** Across the inter-CPU link (QPI/UPI/Infinity Fabric). */
    SYS
  }

  /**
   * The path between one GPU and one NIC.
   *
   * @param gpu the GPU's name, {@code GPU/4000}
   * @param gpuRank the GPU's rank from the dump, or -1
   * @param nic the NIC's name, {@code NIC/6000} (or {@code NET/n} when the dump has no NIC node)
   * @param net the NCCL network device under it ({@code NET/0}), or empty when the dump does not show it
   * @param type how far apart they are
   * @param bandwidth the narrowest link on the path, GB/s
   */
  public record GpuNicPath(String gpu, int gpuRank, String nic, String net, PathType type, double bandwidth) {
    public GpuNicPath {
      Objects.requireNonNull(gpu, "gpu");
      Objects.requireNonNull(nic, "nic");
      Objects.requireNonNull(net, "net");
      Objects.requireNonNull(type, "type");
    }
  }

  public NcclTopology {
    Objects.requireNonNull(host, "host");
    nodes = List.copyOf(nodes);
    links = List.copyOf(links);
    paths = List.copyOf(paths);
  }

  /** The nodes of one type ({@code GPU}, {@code NIC}, …) in printed order. */
  public List<Node> nodes(String type) {
    List<Node> out = new ArrayList<>();
    for (Node n : nodes) {
      if (n.type().equals(type)) {
        out.add(n);
      }
    }
    return out;
  }

  /** For each GPU, its closest NIC(s): the paths of the nearest type and, among those, the widest. */
  public Map<String, List<GpuNicPath>> closestNics() {
    Map<String, List<GpuNicPath>> best = new LinkedHashMap<>();
    for (GpuNicPath p : paths) {
      List<GpuNicPath> current = best.computeIfAbsent(p.gpu(), g -> new ArrayList<>());
      if (current.isEmpty()) {
        current.add(p);
        continue;
      }
      int cmp = CLOSENESS.compare(p, current.get(0));
      if (cmp < 0) {
        current.clear();
        current.add(p);
      } else if (cmp == 0) {
        current.add(p);
      }
    }
    return best;
  }

  static final Comparator<GpuNicPath> CLOSENESS = Comparator.comparing(GpuNicPath::type)
      .thenComparing(Comparator.comparingDouble(GpuNicPath::bandwidth).reversed());
}
