package dev.frdiag.readers.nccl;

import dev.frdiag.readers.nccl.NcclTopology.GpuNicPath;
import dev.frdiag.readers.nccl.NcclTopology.Link;
import dev.frdiag.readers.nccl.NcclTopology.Node;
import dev.frdiag.readers.nccl.NcclTopology.PathType;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Builds one {@link NcclTopology} from the lines of a {@code === System …} dump, one line at a time. */
final class TopologyBuilder {
  private static final Pattern HEADER =
      Pattern.compile("=== System : maxBw ([0-9.]+) totalBw ([0-9.]+) ===\\s*");
  private static final Pattern LINK =
      Pattern.compile("\\+ ([A-Z0-9]+)\\[([0-9.]+)\\] - ([A-Z0-9]+)/(\\S+)(?: \\((.*)\\))?\\s*");
  private static final Pattern ROOT = Pattern.compile("([A-Z0-9]+)/(\\S+)(?: \\((.*)\\))?\\s*");
  /** A dump has a few dozen nodes per host; anything far beyond is not a dump. */
  private static final int MAX_NODES = 4096;

  final String host;
  final int pid;
  final int tid;
  private final long lineNumber;
  private final double maxBw;
  private final double totalBw;
  private final Map<String, Node> nodes = new LinkedHashMap<>();
  private final List<Link> links = new ArrayList<>();
  /** The open branch: each entry is a node name and the column of its {@code +}. */
  private final Deque<Object[]> branch = new ArrayDeque<>();
  private boolean complete;

  private TopologyBuilder(String host, int pid, int tid, long lineNumber, double maxBw, double totalBw) {
    this.host = host;
    this.pid = pid;
    this.tid = tid;
    this.lineNumber = lineNumber;
    this.maxBw = maxBw;
    this.totalBw = totalBw;
  }

  /** A builder when {@code s} from {@code from} is a dump header, else null. */
  static TopologyBuilder start(String s, int from, String host, int pid, int tid, long lineNumber) {
    Matcher m = HEADER.matcher(s).region(from, s.length());
    if (!m.matches()) {
      return null;
    }
    return new TopologyBuilder(host, pid, tid, lineNumber, Double.parseDouble(m.group(1)),
        Double.parseDouble(m.group(2)));
  }

  /** True when {@code s} from {@code from} starts a dump header (cheap check before {@link #start}). */
  static boolean isHeader(String s, int from) {
    return s.startsWith("=== System : ", from);
  }

  /**
   * Takes the next line of the dump. Returns false when the line is not part of it, which ends the dump; the
   * closing {@code ====} line is taken and ends it too ({@link #complete()}).
   */
  boolean accept(String s, int from) {
    int i = from;
    int n = s.length();
    while (i < n && s.charAt(i) == ' ') {
      i++;
    }
    if (i >= n) {
      return false;
    }
    if (s.startsWith("====", i)) {
      complete = true;
      return true;
    }
    if (s.charAt(i) == '+') {
      Matcher m = LINK.matcher(s).region(i, n);
      if (!m.matches() || nodes.size() >= MAX_NODES || links.size() >= 4 * MAX_NODES) {
        return false;
      }
      int column = i - from;
      while (!branch.isEmpty() && (int) branch.peek()[1] >= column) {
        branch.pop();
      }
      if (branch.isEmpty()) {
        return false;
      }
      String parent = (String) branch.peek()[0];
      Node child = node(m.group(3), m.group(4), m.group(5));
      links.add(new Link(parent, child.name(), m.group(1), Double.parseDouble(m.group(2))));
      branch.push(new Object[] {child.name(), column});
      return true;
    }
    Matcher m = ROOT.matcher(s).region(i, n);
    if (!m.matches() || nodes.size() >= MAX_NODES) {
      return false;
    }
    Node root = node(m.group(1), m.group(2), m.group(3));
    branch.clear();
    branch.push(new Object[] {root.name(), -1});
    return true;
  }

  boolean complete() {
    return complete;
  }

  private Node node(String type, String id, String detail) {
    String name = type + "/" + id;
    Node existing = nodes.get(name);
    String d = detail == null ? "" : detail;
    if (existing == null || (existing.detail().isEmpty() && !d.isEmpty())) {
      Node node = new Node(type, id, d);
      nodes.put(name, node);
      return node;
    }
    return existing;
  }

  NcclTopology build() {
    return new NcclTopology(host, pid, maxBw, totalBw, new ArrayList<>(nodes.values()), links, paths(),
        complete, lineNumber);
  }

  /** One edge of the undirected graph the paths are searched in. */
  private record Edge(String to, double bandwidth) {}

  private List<GpuNicPath> paths() {
    // GPU↔NIC traffic never crosses NVLink, so NVLink edges (to NVSwitches and peer GPUs) are left out.
    Map<String, List<Edge>> graph = new HashMap<>();
    Map<String, String> netUnderNic = new HashMap<>();
    Map<String, String> parentOf = new HashMap<>();
    for (Link l : links) {
      parentOf.putIfAbsent(l.to(), l.from());
      if (l.type().equals("NVL") || l.type().equals("NVB")) {
        continue;
      }
      graph.computeIfAbsent(l.from(), k -> new ArrayList<>()).add(new Edge(l.to(), l.bandwidth()));
      graph.computeIfAbsent(l.to(), k -> new ArrayList<>()).add(new Edge(l.from(), l.bandwidth()));
      if (l.from().startsWith("NIC/") && l.to().startsWith("NET/")) {
        netUnderNic.putIfAbsent(l.from(), l.to());
      }
    }
    List<String> targets = new ArrayList<>();
    for (Node n : nodes.values()) {
      if (n.type().equals("NIC")) {
        targets.add(n.name());
      } else if (n.type().equals("NET")) {
        String parent = parentOf.get(n.name());
        if (parent == null || !parent.startsWith("NIC/")) {
          targets.add(n.name());
        }
      }
    }
    List<GpuNicPath> out = new ArrayList<>();
    for (Node gpu : nodes.values()) {
      if (!gpu.type().equals("GPU")) {
        continue;
      }
      List<GpuNicPath> forGpu = new ArrayList<>();
      Map<String, String> previous = search(graph, gpu.name());
      for (String target : targets) {
        if (!previous.containsKey(target)) {
          continue;
        }
        int cpus = 0;
        int switches = 0;
        double narrowest = Double.MAX_VALUE;
        String at = target;
        while (!at.equals(gpu.name())) {
          String prev = previous.get(at);
          narrowest = Math.min(narrowest, bandwidth(graph, prev, at));
          if (!prev.equals(gpu.name())) {
            if (prev.startsWith("CPU/")) {
              cpus++;
            } else if (prev.startsWith("PCI/")) {
              switches++;
            }
          }
          at = prev;
        }
        PathType type = cpus >= 2 ? PathType.SYS : cpus == 1 ? PathType.PHB
            : switches <= 1 ? PathType.PIX : PathType.PXB;
        String net = target.startsWith("NIC/") ? netUnderNic.getOrDefault(target, "") : target;
        forGpu.add(new GpuNicPath(gpu.name(), gpu.gpuRank(), target, net, type, narrowest));
      }
      forGpu.sort(NcclTopology.CLOSENESS.thenComparing(GpuNicPath::nic));
      out.addAll(forGpu);
    }
    return out;
  }

  /** Breadth-first search from {@code start}; returns each reached node's predecessor. */
  private static Map<String, String> search(Map<String, List<Edge>> graph, String start) {
    Map<String, String> previous = new HashMap<>();
    Deque<String> queue = new ArrayDeque<>();
    previous.put(start, start);
    queue.add(start);
    while (!queue.isEmpty()) {
      String at = queue.poll();
      for (Edge e : graph.getOrDefault(at, List.of())) {
        if (previous.putIfAbsent(e.to(), at) == null) {
          queue.add(e.to());
        }
      }
    }
    return previous;
  }

  private static double bandwidth(Map<String, List<Edge>> graph, String from, String to) {
    return graph.get(from).stream().filter(e -> e.to().equals(to)).mapToDouble(Edge::bandwidth).max()
        .orElse(0);
  }
}
