package dev.frdiag.report;

import dev.frdiag.analysis.Ranks;
import dev.frdiag.analysis.StuckCollective;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Draws who waits for whom for the report page (DIAGNOSIS.md §4, "Who waits for whom"): each stuck collective is one
 * node, the ranks that stand alike in it (issued it and wait) folded into it, with an arrow to where each member it
 * lacks stands: the collective that member waits in, or the member itself when it waits in none (never issued it, or
 * left no evidence). A chain ends at such a member, its root, or closes in a cycle of collectives whose ranks wait
 * for each other (a program-order divergence); both are drawn in red, roots rightmost.
 */
final class WaitPicture {
  /** Collectives drawn at most: past that the page says how many it left out. */
  static final int SHOWN = 24;
  private static final int BOX_W = 250;
  private static final int BOX_H = 40;
  private static final int COL_GAP = 110;
  private static final int ROW_GAP = 18;
  private static final int MARGIN = 8;

  private WaitPicture() {}

  /** A node: a stuck collective, or the members some collective lacks that wait in none. */
  private record Node(String title, String subtitle, List<Integer> ranks, boolean root) {}

  /** An arrow: the members of {@code from} wait for {@code ranks}, who stand at {@code to}. */
  private record Edge(int from, int to, List<Integer> ranks) {}

  static void draw(StringBuilder b, List<StuckCollective> stuck, List<Integer> culprits) {
    List<StuckCollective> shown = stuck.size() > SHOWN ? stuck.subList(0, SHOWN) : stuck;
    List<Node> nodes = new ArrayList<>();
    Map<Integer, Integer> waitsIn = new HashMap<>();
    for (StuckCollective s : shown) {
      List<Integer> in = new ArrayList<>(new TreeSet<>(concat(s.waiting(), s.issued())));
      in.forEach(r -> waitsIn.putIfAbsent(r, nodes.size()));
      nodes.add(new Node(s.collective().label(), in.isEmpty() ? "no member shown in it"
          : "ranks " + Ranks.compact(in) + " wait in it", in, false));
    }
    List<Edge> edges = new ArrayList<>();
    Map<String, Integer> roots = new LinkedHashMap<>();
    for (int i = 0; i < shown.size(); i++) {
      StuckCollective s = shown.get(i);
      Map<Integer, List<Integer>> byTarget = new LinkedHashMap<>();
      for (int r : new TreeSet<>(s.notIssued())) {
        Integer there = waitsIn.get(r);
        byTarget.computeIfAbsent(there == null ? root(nodes, roots, "waits in no stuck collective", r) : there,
            k -> new ArrayList<>()).add(r);
      }
      for (int r : new TreeSet<>(s.unknown())) {
        byTarget.computeIfAbsent(root(nodes, roots, "left no usable evidence", r), k -> new ArrayList<>()).add(r);
      }
      int from = i;
      byTarget.forEach((to, ranks) -> edges.add(new Edge(from, to, ranks)));
    }
    if (edges.isEmpty()) {
      return;
    }
    boolean[] inCycle = cycles(shown.size(), edges);
    int[] depth = depths(nodes.size(), edges);
    int maxDepth = 0;
    for (int d : depth) {
      maxDepth = Math.max(maxDepth, d);
    }
    int[] column = new int[nodes.size()];
    int[] row = new int[nodes.size()];
    int[] filled = new int[maxDepth + 1];
    for (int n = 0; n < nodes.size(); n++) {
      column[n] = maxDepth - depth[n];
      row[n] = filled[column[n]]++;
    }
    int rows = 0;
    for (int f : filled) {
      rows = Math.max(rows, f);
    }
    int width = 2 * MARGIN + (maxDepth + 1) * BOX_W + maxDepth * COL_GAP;
    int height = 2 * MARGIN + rows * (BOX_H + ROW_GAP) + 40;
    boolean anyCycle = false;
    for (boolean c : inCycle) {
      anyCycle |= c;
    }
    b.append("<section><h2>Who waits for whom</h2><p class=\"sub\">Each stuck collective, with the ranks that wait "
        + "in it, points at where the members it lacks stand (the arrow names them). In red: where a chain ends (a "
        + "rank that waits in no stuck collective)").append(anyCycle ? " and the collectives whose ranks wait for each other in a cycle "
        + "(issued in different orders or counts)" : "").append(stuck.size() > shown.size() ? "; "
        + (stuck.size() - shown.size()) + " more stuck collectives not drawn" : "").append(".</p>")
        .append("<svg id=\"cascade\" class=\"waits\" role=\"img\" viewBox=\"0 0 ").append(width).append(' ')
        .append(height).append("\" width=\"").append(width).append("\" height=\"").append(height).append("\">")
        .append("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
            + "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#555\"/>"
            + "</marker></defs>");
    for (Edge e : edges) {
      arrow(b, e, x(column[e.from()]), y(row[e.from()]), x(column[e.to()]), y(row[e.to()]),
          e.to() < shown.size() && inCycle[e.from()] && inCycle[e.to()]);
    }
    for (int n = 0; n < nodes.size(); n++) {
      Node node = nodes.get(n);
      boolean red = node.root() || n < shown.size() && inCycle[n];
      boolean culprit = node.ranks().stream().anyMatch(culprits::contains);
      b.append("<g class=\"node").append(node.root() ? " root" : n < shown.size() && inCycle[n] ? " cycle" : "")
          .append(culprit ? " culprit" : "").append("\"><rect x=\"").append(x(column[n])).append("\" y=\"")
          .append(y(row[n])).append("\" width=\"").append(BOX_W).append("\" height=\"").append(BOX_H)
          .append("\" rx=\"4\"").append(red ? " class=\"red\"" : "").append("/><text x=\"")
          .append(x(column[n]) + 8).append("\" y=\"").append(y(row[n]) + 16).append("\">").append(h(node.title()))
          .append("</text><text class=\"dim\" x=\"").append(x(column[n]) + 8).append("\" y=\"")
          .append(y(row[n]) + 32).append("\">").append(h(node.subtitle())).append("</text><title>")
          .append(h(node.title() + ": " + node.subtitle())).append("</title></g>");
    }
    b.append("</svg></section>");
  }

  /** The root node of {@code rank} with {@code why}, made now if no collective pointed at it yet. */
  private static int root(List<Node> nodes, Map<String, Integer> roots, String why, int rank) {
    return roots.computeIfAbsent(rank + ":" + why, k -> {
      nodes.add(new Node("rank " + rank, why, List.of(rank), true));
      return nodes.size() - 1;
    });
  }

  /** Which of the first {@code collectives} nodes reach themselves along the arrows. */
  private static boolean[] cycles(int collectives, List<Edge> edges) {
    boolean[] inCycle = new boolean[collectives];
    for (int start = 0; start < collectives; start++) {
      boolean[] seen = new boolean[collectives];
      List<Integer> todo = new ArrayList<>(List.of(start));
      while (!todo.isEmpty() && !inCycle[start]) {
        int at = todo.remove(todo.size() - 1);
        for (Edge e : edges) {
          if (e.from() == at && e.to() < collectives) {
            if (e.to() == start) {
              inCycle[start] = true;
            } else if (!seen[e.to()]) {
              seen[e.to()] = true;
              todo.add(e.to());
            }
          }
        }
      }
    }
    return inCycle;
  }

  /** Each node's longest chain of arrows to a node with none, not following an arrow back into the chain. */
  private static int[] depths(int count, List<Edge> edges) {
    int[] depth = new int[count];
    boolean[] done = new boolean[count];
    for (int n = 0; n < count; n++) {
      depth(n, edges, depth, done, new boolean[count]);
    }
    return depth;
  }

  private static int depth(int n, List<Edge> edges, int[] depth, boolean[] done, boolean[] onPath) {
    if (done[n]) {
      return depth[n];
    }
    onPath[n] = true;
    int deepest = -1;
    for (Edge e : edges) {
      if (e.from() == n && !onPath[e.to()]) {
        deepest = Math.max(deepest, depth(e.to(), edges, depth, done, onPath));
      }
    }
    onPath[n] = false;
    depth[n] = deepest + 1;
    done[n] = true;
    return depth[n];
  }

  /**
   * An arrow from the right of the box at ({@code x1}, {@code y1}) to the left of the one at ({@code x2},
   * {@code y2}) in the next column; one that goes back (a cycle, a box of the same column) or past a column curves
   * below the boxes instead, where no box hides it.
   */
  private static void arrow(StringBuilder b, Edge e, int x1, int y1, int x2, int y2, boolean cycle) {
    String label = e.ranks().size() == 1 ? "rank " + e.ranks().get(0) : "ranks " + Ranks.compact(e.ranks());
    String cls = "link" + (cycle ? " cycle" : "");
    if (x2 > x1 && x2 - x1 <= BOX_W + COL_GAP) {
      int ax = x1 + BOX_W;
      int ay = y1 + BOX_H / 2;
      int by = y2 + BOX_H / 2;
      b.append("<path class=\"").append(cls).append("\" d=\"M ").append(ax).append(' ').append(ay).append(" C ")
          .append(ax + COL_GAP / 2).append(' ').append(ay).append(' ').append(x2 - COL_GAP / 2).append(' ')
          .append(by).append(' ').append(x2).append(' ').append(by).append("\" marker-end=\"url(#arrow)\"/>")
          .append("<text class=\"dim\" x=\"").append(x2 - 8).append("\" y=\"").append(by - 5)
          .append("\" text-anchor=\"end\">").append(h(label)).append("</text>");
      return;
    }
    int ax = x1 + BOX_W / 2;
    int ay = y1 + BOX_H;
    int bx = x2 + BOX_W / 2 + 20;
    int by = y2 + BOX_H;
    int low = Math.max(ay, by) + ROW_GAP + 12;
    b.append("<path class=\"").append(cls).append("\" d=\"M ").append(ax).append(' ').append(ay).append(" C ")
        .append(ax).append(' ').append(low).append(' ').append(bx).append(' ').append(low).append(' ').append(bx)
        .append(' ').append(by).append("\" marker-end=\"url(#arrow)\"/><text class=\"dim\" x=\"")
        .append((ax + bx) / 2 - 20).append("\" y=\"").append(low - 2).append("\">").append(h(label))
        .append("</text>");
  }

  private static int x(int column) {
    return MARGIN + column * (BOX_W + COL_GAP);
  }

  private static int y(int row) {
    return MARGIN + row * (BOX_H + ROW_GAP);
  }

  private static List<Integer> concat(List<Integer> a, List<Integer> b) {
    List<Integer> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static String h(String text) {
    return UntrustedText.html(text);
  }
}
